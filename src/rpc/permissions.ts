/**
 * The one permission table: every RPC method of every module, implemented or not yet, maps to
 * the single Biscuit fact its caller's token must carry (`docs/reference/fiber-rpc.md` §4).
 * `write` does not imply `read`. A method missing from this table can never be authorised, so a
 * forgotten entry fails closed (and a test checks that every registered method has one).
 */
export type Access = 'read' | 'write';
export type Resource =
  | 'node'
  | 'peers'
  | 'channels'
  | 'payments'
  | 'invoices'
  | 'graph'
  | 'cch'
  | 'watchtower'
  | 'pprof'
  | 'chain'
  | 'messages';

export interface Permission {
  access: Access;
  resource: Resource;
  /** Watchtower methods also need exactly one `node("<id>")` fact: the caller's identity. */
  needsNodeIdentity?: boolean;
}

const r = (resource: Resource): Permission => ({ access: 'read', resource });
const w = (resource: Resource): Permission => ({ access: 'write', resource });
const tower: Permission = { access: 'write', resource: 'watchtower', needsNodeIdentity: true };

export const PERMISSIONS: Readonly<Record<string, Permission>> = {
  // info
  node_info: r('node'),
  // OpenRPC service discovery (Strand): served whatever the enabled modules
  'rpc.discover': r('node'),
  // peer
  connect_peer: w('peers'),
  disconnect_peer: w('peers'),
  list_peers: r('peers'),
  // channel
  open_channel: w('channels'),
  accept_channel: w('channels'),
  abandon_channel: w('channels'),
  list_channels: r('channels'),
  shutdown_channel: w('channels'),
  update_channel: w('channels'),
  open_channel_with_external_funding: w('channels'),
  submit_signed_funding_tx: w('channels'),
  // payment
  send_payment: w('payments'),
  send_payment_with_router: w('payments'),
  get_payment: r('payments'),
  list_payments: r('payments'),
  build_router: r('payments'),
  // invoice
  new_invoice: w('invoices'),
  cancel_invoice: w('invoices'),
  settle_invoice: w('invoices'),
  parse_invoice: r('invoices'),
  get_invoice: r('invoices'),
  // graph
  graph_nodes: r('graph'),
  graph_channels: r('graph'),
  // cch (receive_btc is read in the reference; kept for compatibility of issued tokens)
  send_btc: w('cch'),
  receive_btc: r('cch'),
  get_cch_order: r('cch'),
  // watchtower
  create_watch_channel: tower,
  remove_watch_channel: tower,
  update_revocation: tower,
  update_pending_remote_settlement: tower,
  update_local_settlement: tower,
  create_preimage: tower,
  remove_preimage: tower,
  // dev
  commitment_signed: w('messages'),
  add_tlc: w('channels'),
  remove_tlc: w('channels'),
  submit_commitment_transaction: w('chain'),
  check_channel_shutdown: w('channels'),
  sign_external_funding_tx: w('channels'),
  // prof
  pprof: w('pprof'),
  // pubsub — the reference has no rule for unsubscribe (always refused); Strand lets a
  // subscriber that could subscribe also unsubscribe.
  subscribe_store_changes: r('cch'),
  unsubscribe_store_changes: r('cch'),
  // admin (Strand): backups of the node's store and keys
  backup_now: w('node'),
};

/** `read("node")` — the Datalog fact a token must hold for the permission. */
export function permissionFact(p: Permission): string {
  return `${p.access}("${p.resource}")`;
}
