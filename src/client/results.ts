/**
 * What each RPC method answers, as zod schemas read off the handlers in `rpc/modules/*.ts` (the
 * seed's field names: state names and flags as Strand writes them by default). The client casts
 * replies to these types without parsing them (a reply is trusted as the node's own); the
 * client's process test parses real replies with the schemas, so a declared shape that drifts
 * from what the node sends fails there.
 */
import { z } from 'zod';

/** `0x` + lower-case hex digits: quantities, hashes and bytes as the node writes them. */
const hex = z.string().regex(/^0x[0-9a-f]*$/, { error: 'expected 0x-prefixed lower-case hex' });
/** A compressed pubkey as the node writes it: 66 hex digits, no `0x`. */
const pubkeyHex = z.string().regex(/^0[23][0-9a-f]{64}$/, { error: 'expected a pubkey without 0x' });

export const scriptResult = z.object({
  code_hash: hex,
  hash_type: z.enum(['type', 'data', 'data1', 'data2']),
  args: hex,
});

const udtCfgInfo = z.object({
  name: z.string(),
  script: scriptResult,
  auto_accept_amount: hex.nullable(),
  cell_deps: z.array(z.unknown()),
});

export const nodeInfoResult = z.object({
  version: z.string(),
  commit_hash: z.string(),
  pubkey: pubkeyHex,
  features: z.array(z.string()),
  node_name: z.string().nullable(),
  addresses: z.array(z.string()),
  chain_hash: hex,
  open_channel_auto_accept_min_ckb_funding_amount: hex,
  auto_accept_channel_ckb_funding_amount: hex,
  default_funding_lock_script: scriptResult,
  tlc_expiry_delta: hex,
  tlc_min_value: hex,
  tlc_fee_proportional_millionths: hex,
  channel_count: hex,
  pending_channel_count: hex,
  peers_count: hex,
  udt_cfg_infos: z.array(udtCfgInfo),
  /** `ok`, or `unreachable since <ISO time>` while the CKB RPC does not answer (Strand's). */
  ckb_rpc_status: z.string().nullable(),
});

const pendingTlc = z.object({
  id: hex,
  amount: hex,
  payment_hash: hex,
  expiry: hex,
  forwarding_channel_id: hex.nullable(),
  forwarding_tlc_id: hex.nullable(),
  status: z.union([z.object({ Outbound: z.string() }), z.object({ Inbound: z.string() })]),
});

export const channelResult = z.object({
  channel_id: hex,
  is_public: z.boolean(),
  is_acceptor: z.boolean(),
  is_one_way: z.boolean(),
  channel_outpoint: hex.nullable(),
  peer_id: z.string(),
  pubkey: pubkeyHex,
  funding_udt_type_script: scriptResult.nullable(),
  /** `state_name`: `NEGOTIATING_FUNDING` … `CHANNEL_READY`, `SHUTTING_DOWN`, `CLOSED`; flags as a list. */
  state: z.object({ state_name: z.string(), state_flags: z.array(z.string()) }),
  local_balance: hex,
  offered_tlc_balance: hex,
  remote_balance: hex,
  received_tlc_balance: hex,
  pending_tlcs: z.array(pendingTlc),
  latest_commitment_transaction_hash: hex.nullable(),
  created_at: hex,
  enabled: z.boolean(),
  tlc_expiry_delta: hex,
  tlc_fee_proportional_millionths: hex,
  shutdown_transaction_hash: hex.nullable(),
  failure_detail: z.string().nullable(),
});

export const paymentStatus = z.enum(['Created', 'Inflight', 'Success', 'Failed']);

export const paymentResult = z.object({
  payment_hash: hex,
  status: paymentStatus,
  created_at: hex,
  last_updated_at: hex,
  failed_error: z.string().nullable(),
  fee: hex,
  custom_records: z.record(z.string(), z.string()).nullable(),
  /** Per attempt in flight or done, the hops it took. */
  routers: z.array(
    z.object({ nodes: z.array(z.object({ pubkey: z.string(), amount: hex, channel_outpoint: hex })) }),
  ),
});

/** An invoice as JSON; `attrs` holds one single-key object per attribute (`{ Description: "…" }`). */
export const invoiceResult = z.object({
  currency: z.enum(['Fibb', 'Fibt', 'Fibd']),
  amount: hex.nullable(),
  signature: z.string().nullable(),
  data: z.object({
    timestamp: hex,
    payment_hash: hex,
    attrs: z.array(z.record(z.string(), z.unknown())),
  }),
});

export const invoiceStatus = z.enum(['Open', 'Cancelled', 'Expired', 'Received', 'Paid']);

const storedInvoice = z.object({
  invoice_address: z.string(),
  invoice: invoiceResult,
  status: invoiceStatus,
});

const routerHop = z.object({
  target: pubkeyHex,
  channel_outpoint: hex,
  amount_received: hex,
  incoming_tlc_expiry: hex,
});

const graphNode = z.object({
  node_name: z.string(),
  version: z.string(),
  addresses: z.array(z.string()),
  features: z.array(z.string()),
  pubkey: pubkeyHex,
  timestamp: hex,
  chain_hash: hex,
  auto_accept_min_ckb_funding_amount: hex,
  udt_cfg_infos: z.array(
    z.object({ name: z.string(), script: z.unknown(), auto_accept_amount: hex.nullable() }),
  ),
});

const updateInfo = z
  .object({
    timestamp: hex,
    enabled: z.boolean(),
    outbound_liquidity: hex.nullable(),
    tlc_expiry_delta: hex,
    tlc_minimum_value: hex,
    fee_rate: hex,
  })
  .nullable();

const graphChannel = z.object({
  channel_outpoint: hex,
  node1: pubkeyHex,
  node2: pubkeyHex,
  created_timestamp: hex,
  update_info_of_node1: updateInfo,
  update_info_of_node2: updateInfo,
  capacity: hex,
  chain_hash: hex,
  udt_type_script: scriptResult.nullable(),
});

/** A CKB transaction in CKB's JSON-RPC form (`version`, `cell_deps`, `inputs`, …). */
const transactionJson = z.record(z.string(), z.unknown());

/** A change pushed to `subscribe_store_changes` subscribers, externally tagged (fiber-rpc.md §7). */
export const storeChange = z.union([
  z.object({ PutPreimage: z.object({ payment_hash: hex, payment_preimage: hex }) }),
  z.object({ PutCkbInvoiceStatus: z.object({ payment_hash: hex, invoice_status: z.string() }) }),
  z.object({ PutPaymentSession: z.object({ payment_hash: hex, payment_session: z.unknown() }) }),
]);
export type StoreChange = z.output<typeof storeChange>;

/** The result schema of every method, by name. */
export const RESULT_SCHEMAS = {
  node_info: nodeInfoResult,
  // peer
  connect_peer: z.null(),
  disconnect_peer: z.null(),
  list_peers: z.object({
    peers: z.array(z.object({ pubkey: pubkeyHex, peer_id: z.string(), address: z.string() })),
  }),
  // channel
  open_channel: z.object({ temporary_channel_id: hex }),
  accept_channel: z.object({ channel_id: hex }),
  abandon_channel: z.null(),
  list_channels: z.object({ channels: z.array(channelResult) }),
  shutdown_channel: z.null(),
  update_channel: z.null(),
  open_channel_with_external_funding: z.object({ channel_id: hex, unsigned_funding_tx: transactionJson }),
  submit_signed_funding_tx: z.object({ channel_id: hex, funding_tx_hash: hex }),
  // payment
  send_payment: paymentResult,
  send_payment_with_router: paymentResult,
  get_payment: paymentResult,
  list_payments: z.object({ payments: z.array(paymentResult), last_cursor: hex.nullable() }),
  build_router: z.object({ router_hops: z.array(routerHop) }),
  // invoice
  new_invoice: z.object({ invoice_address: z.string(), invoice: invoiceResult }),
  parse_invoice: z.object({ invoice: invoiceResult }),
  get_invoice: storedInvoice,
  cancel_invoice: storedInvoice,
  settle_invoice: z.object({}),
  // graph
  graph_nodes: z.object({ nodes: z.array(graphNode), last_cursor: hex }),
  graph_channels: z.object({ channels: z.array(graphChannel), last_cursor: hex }),
  // watchtower
  create_watch_channel: z.null(),
  remove_watch_channel: z.null(),
  update_revocation: z.null(),
  update_pending_remote_settlement: z.null(),
  update_local_settlement: z.null(),
  create_preimage: z.null(),
  remove_preimage: z.null(),
  // dev
  add_tlc: z.object({ tlc_id: hex }),
  remove_tlc: z.null(),
  commitment_signed: z.null(),
  submit_commitment_transaction: z.object({ tx_hash: hex }),
  check_channel_shutdown: z.null(),
  sign_external_funding_tx: z.object({ signed_funding_tx: transactionJson }),
  // admin, prof
  backup_now: z.object({ path: z.string(), size: hex, created_at: hex }),
  pprof: z.object({ path: z.string() }),
  // pubsub (WebSocket only): a subscription id, and whether a cancel found its subscription
  subscribe_store_changes: z.number(),
  unsubscribe_store_changes: z.boolean(),
} as const;

/** The result type of each method. */
export type RpcResults = { [M in keyof typeof RESULT_SCHEMAS]: z.output<(typeof RESULT_SCHEMAS)[M]> };
