// The wallet domain's public surface: a double-entry ledger of buyer wallets (tables
// wallet_accounts, wallet_transfers are ours). Other modules move money only through these
// functions, each in the caller's transaction.
export {
  findBalance,
  findRevenue,
  REVENUE_BUCKETS,
  revenueBucketOf,
  TRANSFER_KINDS,
  type TransferKind,
  type TransferOutcome,
} from './wallet.repo.ts';
export {
  debitForOrder,
  debitForOrders,
  debitIdFor,
  refundToWallet,
  walletDebitOf,
  walletRefundOf,
  type OrderDebit,
  type WalletRefund,
} from './wallet.service.ts';
export { walletRoutes } from './wallet.routes.ts';
