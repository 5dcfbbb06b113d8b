-- Issue 16, P1: the one-statement batch takes the SKU's row lock LAST (orders.batch.fast.repo.ts):
-- it decides on a plain read, writes every buyer's rows, and only then decrements. If the
-- decrement then finds fewer units than the read (another batch or process took some) or a changed
-- definition, the statement must write nothing: this raises, so the statement (its implicit
-- transaction) rolls back whole, and the caller runs the transactional batch on the locked row.
-- Its own SQLSTATE, so the caller can tell it from any other failure.
CREATE FUNCTION flashpay_batch_short(wanted integer) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'batch: the SKU row no longer allows % units or its definition changed', wanted
    USING ERRCODE = 'FPB01';
END $$;
