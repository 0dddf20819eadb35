/**
 * Every configuration field, once. The loader derives from this table the environment variable
 * and the command-line flag of each field (fnn's names: `fiber.tlc_fee_proportional_millionths`
 * ↔ `FIBER_TLC_FEE_PROPORTIONAL_MILLIONTHS` ↔ `--fiber-tlc-fee-proportional-millionths`), so a new
 * field is one row here plus its rule in `config.ts`.
 */
export type FieldKind =
  /** free text */
  | 'string'
  /** true / false */
  | 'bool'
  /** non-negative integer, possibly beyond 2^53 (amounts): read as bigint */
  | 'uint'
  /** comma-separated list on env/flag, YAML list in the file */
  | 'list'
  /** structured value: YAML in the file, JSON text on env/flag */
  | 'json';

export interface FieldDef {
  /** Dotted path in the YAML file, e.g. `rpc.listening_addr`; top-level keys have no dot. */
  path: string;
  kind: FieldKind;
  /** Overrides of the derived names (fnn has a few irregular ones). */
  env?: string[];
  flag?: string[];
  /** Other keys accepted in the file for this field (Fiber v0.8 names). */
  fileAliases?: string[];
}

const f = (path: string, kind: FieldKind, extra: Omit<FieldDef, 'path' | 'kind'> = {}): FieldDef => ({
  path,
  kind,
  ...extra,
});

export const CONFIG_FIELDS: FieldDef[] = [
  f('services', 'list', { env: ['FNN_SERVICES', 'SERVICES'], flag: ['services'] }),
  f('log_level', 'string', { env: ['STRAND_LOG', 'LOG_LEVEL'], flag: ['log-level'] }),

  // rpc
  f('rpc.listening_addr', 'string'),
  f('rpc.auth_public_key', 'string', {
    env: ['RPC_AUTH_PUBLIC_KEY', 'RPC_BISCUIT_PUBLIC_KEY'],
    flag: ['rpc-auth-public-key', 'rpc-biscuit-public-key'],
    fileAliases: ['rpc.biscuit_public_key'],
  }),
  f('rpc.auth_revoked_ids', 'list'),
  f('rpc.enabled_modules', 'list'),
  f('rpc.cors_enabled', 'bool'),
  f('rpc.cors_allowed_origins', 'list'),
  f('rpc.max_request_body_size', 'uint'),

  // fiber
  f('fiber.base_dir', 'string'),
  f('fiber.listening_addr', 'string'),
  f('fiber.announce_listening_addr', 'bool'),
  f('fiber.announce_private_addr', 'bool'),
  f('fiber.announced_addrs', 'list'),
  f('fiber.bootnode_addrs', 'list'),
  f('fiber.announced_node_name', 'string'),
  f('fiber.chain', 'string'),
  f('fiber.scripts', 'json'),
  f('fiber.open_channel_auto_accept_min_ckb_funding_amount', 'uint'),
  f('fiber.auto_accept_channel_ckb_funding_amount', 'uint'),
  f('fiber.tlc_expiry_delta', 'uint'),
  f('fiber.tlc_min_value', 'uint'),
  f('fiber.tlc_fee_proportional_millionths', 'uint'),
  f('fiber.auto_announce_node', 'bool'),
  f('fiber.announce_node_interval_seconds', 'uint'),
  f('fiber.gossip_network_maintenance_interval_ms', 'uint'),
  f('fiber.gossip_store_maintenance_interval_ms', 'uint'),
  f('fiber.max_inbound_peers', 'uint'),
  f('fiber.min_outbound_peers', 'uint'),
  f('fiber.sync_network_graph', 'bool'),
  f('fiber.watchtower_check_interval_seconds', 'uint'),
  f('fiber.standalone_watchtower_rpc_url', 'string'),
  f('fiber.standalone_watchtower_token', 'string'),
  f('fiber.disable_built_in_watchtower', 'bool'),
  f('fiber.to_be_accepted_channels_number_limit', 'uint'),
  // fnn's environment variable is misspelled; both spellings are read.
  f('fiber.to_be_accepted_channels_bytes_limit', 'uint', {
    env: ['FIBER_TO_BE_ACCEPTED_CHANNELS_BYTES_LIMIT', 'FIBER_TO_BE_ACCEPTED_CHANNELS_BYTESS_LIMIT'],
  }),
  f('fiber.funding_timeout_seconds', 'uint'),
  f('fiber.external_funding_timeout_seconds', 'uint'),
  f('fiber.reuse_port_for_websocket', 'bool'),
  f('fiber.milli_seconds_per_epoch', 'uint'),
  f('fiber.check_channels_interval_ms', 'uint'),
  f('fiber.peer_response_timeout_ms', 'uint'),

  // ckb
  f('ckb.base_dir', 'string'),
  f('ckb.rpc_url', 'string', {
    env: ['CKB_NODE_RPC_URL', 'CKB_RPC_URL'],
    flag: ['ckb-node-rpc-url', 'ckb-rpc-url'],
  }),
  f('ckb.udt_whitelist', 'json'),
  f('ckb.tx_tracing_polling_interval_ms', 'uint'),
  f('ckb.funding_tx_shell_builder', 'string', {
    env: ['FIBER_FUNDING_TX_SHELL_BUILDER'],
    flag: ['fiber-funding-tx-shell-builder'],
  }),

  // cch (fnn's `cch-…` flags and `CCH_…` variables)
  f('cch.base_dir', 'string'),
  f('cch.lnd_rpc_url', 'string'),
  f('cch.lnd_cert_path', 'string'),
  f('cch.lnd_macaroon_path', 'string'),
  f('cch.wrapped_btc_type_script_args', 'string'),
  f('cch.wrapped_btc_type_script', 'string'),
  f('cch.order_expiry_delta_seconds', 'uint'),
  f('cch.base_fee_sats', 'uint'),
  f('cch.fee_rate_per_million_sats', 'uint'),
  f('cch.btc_final_tlc_expiry_delta_blocks', 'uint'),
  f('cch.ckb_final_tlc_expiry_delta_seconds', 'uint'),
  f('cch.min_outgoing_invoice_expiry_delta_seconds', 'uint'),
  f('cch.fiber_rpc_url', 'string'),
  f('cch.fiber_rpc_token', 'string'),
];

/** `rpc.listening_addr` → `RPC_LISTENING_ADDR`. */
export function envNames(def: FieldDef): string[] {
  return def.env ?? [def.path.replace(/\./g, '_').toUpperCase()];
}

/** `rpc.listening_addr` → `rpc-listening-addr`. */
export function flagNames(def: FieldDef): string[] {
  return def.flag ?? [def.path.replace(/[._]/g, '-')];
}
