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
  /** One line for `strand node --help`. */
  help: string;
  /** The heading the field is listed under in `strand node --help`. */
  section: string;
  /** Overrides of the derived names (fnn has a few irregular ones). */
  env?: string[];
  flag?: string[];
  /** Other keys accepted in the file for this field (Fiber v0.8 names). */
  fileAliases?: string[];
}

type Extra = Omit<FieldDef, 'path' | 'kind' | 'help' | 'section'>;
type Row = Omit<FieldDef, 'section'>;

const f = (path: string, kind: FieldKind, help: string, extra: Extra = {}): Row => ({
  path,
  kind,
  help,
  ...extra,
});

/** The rows of one help section, in the order listed. */
const section = (title: string, rows: Row[]): FieldDef[] => rows.map((r) => ({ ...r, section: title }));

export const CONFIG_FIELDS: FieldDef[] = [
  ...section('General', [
    f('services', 'list', 'services to run: fiber,rpc,ckb,cch', {
      env: ['FNN_SERVICES', 'SERVICES'],
      flag: ['services'],
    }),
    f('log_level', 'string', 'trace | debug | info | warn | error | fatal | silent (default info)', {
      env: ['STRAND_LOG', 'LOG_LEVEL'],
      flag: ['log-level'],
    }),
    // Strand's: the preset of chain hash, scripts, UDT whitelist and RPC URL (chain/networks.ts).
    f('network', 'string', 'dev | testnet | mainnet: chain, scripts, UDT whitelist and CKB RPC URL preset', {
      env: ['STRAND_NETWORK'],
      flag: ['network'],
    }),
    f('log_format', 'string', 'json (one JSON object a line, default) | pretty (readable lines)', {
      env: ['STRAND_LOG_FORMAT'],
      flag: ['log-format'],
    }),
    f(
      'heap_growth_percent',
      'uint',
      'a full garbage collection lets the heap grow this % past what survived it before the next (default 200; 0: V8 decides)',
      { env: ['STRAND_HEAP_GROWTH_PERCENT'] },
    ),
  ]),
  ...section('Store', [
    f(
      'store.url',
      'string',
      'postgres://user:pass@host:port/db[?query_timeout=ms]: the store on Postgres (unset: the SQLite file); a call unanswered within query_timeout (default 120000) stops the node',
    ),
    f('store.lease_ms', 'uint', 'Postgres: how long the leader lease lasts unless renewed (default 10000)'),
    f(
      'store.timeout_ms',
      'uint',
      'Postgres: a store call unanswered within it stops the node (default 120000; or query_timeout in store.url, not both)',
    ),
  ]),
  ...section('RPC', [
    f('rpc.listening_addr', 'string', 'JSON-RPC address, host:port (default 127.0.0.1:8227)'),
    f(
      'rpc.auth_public_key',
      'string',
      'ed25519/<hex>: key verifying Biscuit bearer tokens (auth off when unset)',
      {
        env: ['RPC_AUTH_PUBLIC_KEY', 'RPC_BISCUIT_PUBLIC_KEY'],
        flag: ['rpc-auth-public-key', 'rpc-biscuit-public-key'],
        fileAliases: ['rpc.biscuit_public_key'],
      },
    ),
    f('rpc.auth_revoked_ids', 'list', 'revocation ids (hex) of tokens to refuse'),
    f(
      'rpc.enabled_modules',
      'list',
      'modules served: info,peer,channel,payment,invoice,graph,cch,watchtower,…',
    ),
    f('rpc.cors_enabled', 'bool', 'answer CORS preflights and add CORS headers'),
    f('rpc.cors_allowed_origins', 'list', 'origins allowed by CORS (empty: any)'),
    f('rpc.max_request_body_size', 'uint', 'largest request body in bytes (default 10 MiB)'),
    f('rpc.dashboard', 'bool', 'serve the dashboard page at <rpc address>/dashboard/ (on in devnet)'),
    f('rpc.compat', 'string', "output names: seed (default) | fnn-0.8 (fnn v0.8's, docs/rpc.md)"),
  ]),
  ...section('Fiber: P2P and gossip', [
    f('fiber.base_dir', 'string', 'directory of the node key and store (default <dir>/fiber)'),
    f('fiber.listening_addr', 'string', 'P2P multiaddr, TCP and WebSocket (default /ip4/127.0.0.1/tcp/8228)'),
    f('fiber.announce_listening_addr', 'bool', 'announce the listening address in the node announcement'),
    f('fiber.announce_private_addr', 'bool', 'announce and accept private addresses in gossip'),
    f('fiber.announced_addrs', 'list', 'addresses to announce'),
    f('fiber.bootnode_addrs', 'list', 'peers dialled at start and kept connected'),
    f('fiber.announced_node_name', 'string', 'node name in the announcement (at most 32 bytes)'),
    f('fiber.chain', 'string', 'mainnet | testnet | dev (default), or a chain spec path'),
    f(
      'fiber.scripts',
      'json',
      "the Fiber scripts and their cell deps; replace the network preset's entries of the same name",
    ),
    f('fiber.auto_announce_node', 'bool', 'announce this node periodically (default true)'),
    f('fiber.announce_node_interval_seconds', 'uint', 'period of the node announcement (default 3600)'),
    f('fiber.gossip_network_maintenance_interval_ms', 'uint', 'gossip peer maintenance period'),
    f('fiber.gossip_store_maintenance_interval_ms', 'uint', 'gossip store maintenance period'),
    f('fiber.max_inbound_peers', 'uint', 'most inbound sessions with a proven key (default 16)'),
    f('fiber.min_outbound_peers', 'uint', 'outbound sessions to keep (default 8)'),
    f('fiber.sync_network_graph', 'bool', 'sync the network graph from peers (default true)'),
    f('fiber.reuse_port_for_websocket', 'bool', 'serve WebSocket on the P2P port (default true)'),
    f('fiber.metrics_addr', 'string', 'Prometheus metrics at http://<host:port>/metrics (off when unset)'),
  ]),
  ...section('Fiber: channels and TLCs', [
    f(
      'fiber.open_channel_auto_accept_min_ckb_funding_amount',
      'uint',
      'smallest CKB funding auto-accepted (shannons)',
    ),
    f(
      'fiber.auto_accept_channel_ckb_funding_amount',
      'uint',
      'what this node adds when auto-accepting (shannons)',
    ),
    f('fiber.tlc_expiry_delta', 'uint', 'forwarding policy: expiry delta in ms (default 4 h)'),
    f('fiber.tlc_min_value', 'uint', 'forwarding policy: smallest TLC forwarded'),
    f(
      'fiber.tlc_fee_proportional_millionths',
      'uint',
      'forwarding policy: fee rate in millionths (default 1000)',
    ),
    f('fiber.to_be_accepted_channels_number_limit', 'uint', 'openings awaiting acceptance per peer'),
    // fnn's environment variable is misspelled; both spellings are read.
    f('fiber.to_be_accepted_channels_bytes_limit', 'uint', 'bytes of openings awaiting acceptance per peer', {
      env: ['FIBER_TO_BE_ACCEPTED_CHANNELS_BYTES_LIMIT', 'FIBER_TO_BE_ACCEPTED_CHANNELS_BYTESS_LIMIT'],
    }),
    f('fiber.funding_timeout_seconds', 'uint', 'an opening not funded by then is dropped (default 1 day)'),
    f(
      'fiber.external_funding_timeout_seconds',
      'uint',
      'wait for an externally signed funding tx (default 300)',
    ),
    f('fiber.milli_seconds_per_epoch', 'uint', 'epoch length in ms: the least TLC expiry delta is 2/3 of it'),
    f('fiber.check_channels_interval_ms', 'uint', 'period of the TLC expiry checks (default 60000)'),
    f('fiber.peer_response_timeout_ms', 'uint', 'an unanswered TLC round drops the session (default 30000)'),
    f('fiber.pipelined_updates', 'bool', 'offer pipelined TLC updates to Strand peers (default false)'),
  ]),
  ...section('Fiber: watchtower', [
    f('fiber.watchtower_check_interval_seconds', 'uint', 'watchtower pass period; 0: never (default 60)'),
    f('fiber.standalone_watchtower_rpc_url', 'string', 'RPC URL of a standalone watchtower to feed'),
    f('fiber.standalone_watchtower_token', 'string', 'bearer token for that watchtower'),
    f('fiber.disable_built_in_watchtower', 'bool', 'run no watchtower in this node'),
  ]),
  ...section('CKB chain', [
    f('ckb.base_dir', 'string', 'directory of the wallet key (default <dir>/ckb)'),
    f('ckb.rpc_url', 'string', 'CKB node RPC URL (default http://127.0.0.1:8114)', {
      env: ['CKB_NODE_RPC_URL', 'CKB_RPC_URL'],
      flag: ['ckb-node-rpc-url', 'ckb-rpc-url'],
    }),
    f(
      'ckb.udt_whitelist',
      'json',
      'tokens channels may hold: [{name, script, cell_deps, auto_accept_amount}]',
    ),
    f(
      'ckb.tx_tracing_polling_interval_ms',
      'uint',
      'how often channels poll the chain for their txs (default 1000)',
    ),
    f('ckb.funding_tx_shell_builder', 'string', 'external command that builds funding txs', {
      env: ['FIBER_FUNDING_TX_SHELL_BUILDER'],
      flag: ['fiber-funding-tx-shell-builder'],
    }),
  ]),
  ...section('Cross-chain hub (cch service)', [
    f('cch.base_dir', 'string', 'directory of the hub (default <dir>/cch)'),
    f('cch.lnd_rpc_url', 'string', "LND's gRPC address, host:port"),
    f('cch.lnd_cert_path', 'string', "LND's TLS certificate (tls.cert)"),
    f('cch.lnd_macaroon_path', 'string', 'LND macaroon (admin.macaroon or one with invoices and router)'),
    f(
      'cch.wrapped_btc_type_script_args',
      'string',
      "wrapped BTC UDT args (fnn's; Strand needs the full script)",
    ),
    f('cch.wrapped_btc_type_script', 'string', 'wrapped BTC UDT type script, JSON'),
    f('cch.order_expiry_delta_seconds', 'uint', 'how long an order waits for its incoming payment'),
    f('cch.base_fee_sats', 'uint', 'hub fee per swap, sats'),
    f('cch.fee_rate_per_million_sats', 'uint', 'hub fee rate, per million'),
    f('cch.btc_final_tlc_expiry_delta_blocks', 'uint', 'final CLTV delta of the Lightning side, blocks'),
    f('cch.ckb_final_tlc_expiry_delta_seconds', 'uint', 'final TLC expiry delta of the Fiber side, seconds'),
    f('cch.min_outgoing_invoice_expiry_delta_seconds', 'uint', 'least time left on an invoice the hub pays'),
    f('cch.fiber_rpc_url', 'string', 'standalone hub: the Fiber node it follows'),
    f('cch.fiber_rpc_token', 'string', 'standalone hub: bearer token for that node'),
  ]),
];

/** `rpc.listening_addr` → `RPC_LISTENING_ADDR`. */
export function envNames(def: FieldDef): string[] {
  return def.env ?? [def.path.replace(/\./g, '_').toUpperCase()];
}

/** `rpc.listening_addr` → `rpc-listening-addr`. */
export function flagNames(def: FieldDef): string[] {
  return def.flag ?? [def.path.replace(/[._]/g, '-')];
}
