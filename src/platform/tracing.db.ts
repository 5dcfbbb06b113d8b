import { activeTraceparent, isTraceparent, type Span } from './tracing.ts';

// What a transaction's span says about its statements: each one's name (a named statement's
// `name`, else its verb and first table, OpenTelemetry's `db.query.summary` form), never its text
// past that and never its values. Installed on a checked-out client for one transaction, and only
// while tracing is on.

/** How many distinct statement names one span lists (a transaction looping over rows repeats them). */
const MAX_NAMES = 32;

const VERB = /^\s*(?:\(\s*)?([a-z]+)/i;
const TABLE = /\b(?:from|into|update|join)\s+(?:only\s+)?([a-z_][a-z0-9_.]*)/i;

/** `SELECT orders`, `INSERT outbox`, or the statement's own name. */
export function statementName(query: unknown): string {
  const config =
    typeof query === 'object' && query !== null ? (query as { name?: unknown; text?: unknown }) : undefined;
  if (typeof config?.name === 'string' && config.name !== '') return config.name;
  const text = typeof query === 'string' ? query : typeof config?.text === 'string' ? config.text : '';
  const verb = VERB.exec(text)?.[1]?.toUpperCase() ?? 'QUERY';
  if (verb === 'BEGIN' || verb === 'COMMIT' || verb === 'ROLLBACK' || verb === 'SAVEPOINT' || verb === 'RELEASE')
    return verb;
  const table = TABLE.exec(text)?.[1];
  return table ? `${verb} ${table}` : verb;
}

type Queryable = { query: (...args: unknown[]) => unknown };

/**
 * Records the names of the statements `client` runs until the returned function is called (which
 * writes them on `span` and takes the recorder off the client).
 */
export function recordStatements(client: object, span: Span): () => void {
  const target = client as Queryable;
  const original = target.query;
  const names = new Set<string>();
  let count = 0;
  target.query = function (this: unknown, ...args: unknown[]) {
    count++;
    if (names.size < MAX_NAMES) names.add(statementName(args[0]));
    return original.apply(this, args);
  };
  return () => {
    // The prototype's query again: the property was only ever ours.
    delete (target as Partial<Queryable>).query;
    if (target.query !== original) target.query = original;
    span.setAttribute('db.statements', [...names]);
    span.setAttribute('db.statement_count', count);
    const first = [...names].find((name) => !['BEGIN', 'COMMIT', 'ROLLBACK'].includes(name));
    if (first) span.updateName(`tx ${first}`);
  };
}

/**
 * The statement that makes the transaction's `traceparent` the default of what it writes (the
 * outbox row's trace context, migration 200): only a well-formed W3C value, so that formatting it
 * into the BEGIN's text is safe.
 */
export function traceparentSetting(): string {
  const traceparent = activeTraceparent();
  return isTraceparent(traceparent) ? `; SET LOCAL flashpay.traceparent = '${traceparent}'` : '';
}
