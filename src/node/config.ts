/**
 * Node configuration: the YAML file of fnn's shape (`fiber:`, `rpc:`, `ckb:`, `services:`),
 * overridden field by field by environment variables, overridden in turn by command-line flags
 * (flag > env > file > default). The merged result is validated by one schema; the first bad
 * field stops start-up with a message that names it.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { cchSection, resolveCchConfig } from '../cch/index.ts';
import {
  NETWORK_NAMES,
  NETWORKS,
  type NetworkName,
  networkOfChain,
  readScriptsConfig,
  readUdtWhitelist,
  ScriptsConfigError,
  UdtWhitelistError,
} from '../chain/index.ts';
import { SHANNONS_PER_CKB as CKB } from '../codec/index.ts';
import { DEFAULT_MODULES, MAX_FEE_PROPORTIONAL_MILLIONTHS, MODULE_NAMES } from '../rpc/index.ts';
import { CONFIG_FIELDS, envNames, type FieldDef, flagNames } from './config-fields.ts';
import { DEFAULT_HEAP_GROWTH_PERCENT, MAX_HEAP_GROWTH_PERCENT } from './heap.ts';

export class ConfigError extends Error {}

const uint = z
  .union([z.bigint(), z.number().int()])
  .transform((v) => BigInt(v))
  .pipe(z.bigint().nonnegative());
/** An unsigned value at most `max`, the limit named in the refusal. */
const uintUpTo = (max: bigint, what: string) =>
  uint.pipe(z.bigint().max(max, { error: `at most ${max} (${what})` }));
const U64_MAX = (1n << 64n) - 1n;
const U128_MAX = (1n << 128n) - 1n;
const shannons = uintUpTo(U64_MAX, 'u64 shannons');
const uintNum = uint.pipe(z.bigint().max(BigInt(Number.MAX_SAFE_INTEGER))).transform(Number);
/** A period or length in time: 0 would make a timer spin (or an epoch of nothing). */
const positiveNum = uint
  .pipe(z.bigint().min(1n, { error: 'must be at least 1' }).max(BigInt(Number.MAX_SAFE_INTEGER)))
  .transform(Number);
const hostPort = z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, {
  error: 'expected host:port, e.g. 127.0.0.1:8227',
});
const scriptJson = z.object({
  code_hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, { error: 'expected 0x + 32-byte hex' }),
  hash_type: z.enum(['type', 'data', 'data1', 'data2']),
  args: z.string(),
});
// Only the shape here: `readUdtWhitelist` checks each entry (args hex or pattern, cell deps).
const udtEntry = z.object({
  name: z.string(),
  script: scriptJson,
  cell_deps: z.array(z.unknown()).default([]),
  auto_accept_amount: uint.optional(),
});

export const SERVICE_NAMES = ['fiber', 'rpc', 'ckb', 'cch'] as const;

const schema = z.object({
  services: z
    .array(
      z
        .string()
        .transform((s) => s.toLowerCase())
        .pipe(z.enum(SERVICE_NAMES)),
    )
    .min(1, { error: 'at least one service is required' })
    .default(['fiber', 'rpc', 'ckb']),
  log_level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** Unset: follows `fiber.chain` (mainnet, testnet, else dev). */
  network: z.enum(NETWORK_NAMES as [NetworkName, ...NetworkName[]]).optional(),
  log_format: z.enum(['json', 'pretty'], { error: 'expected json or pretty' }).default('json'),
  /** How far V8 lets the heap grow past what survived a full collection before the next (`heap.ts`). */
  heap_growth_percent: uintUpTo(BigInt(MAX_HEAP_GROWTH_PERCENT), 'percent')
    .transform(Number)
    .default(DEFAULT_HEAP_GROWTH_PERCENT),
  /** Where the node keeps its state: the SQLite file under `fiber/store/` unless `url` names a Postgres database. */
  store: z
    .object({
      url: z
        .string()
        .regex(/^postgres(ql)?:\/\/./, { error: 'expected postgres://user:password@host:port/database' })
        .optional(),
      /** The leader lease (Postgres only): renewed every third of it; a standby takes over once it ran out. */
      lease_ms: positiveNum.default(10_000),
      /** Postgres only: how long one store call may take before the node stops (unset: 120 s). */
      timeout_ms: positiveNum.optional(),
    })
    .prefault({}),
  rpc: z
    .object({
      listening_addr: hostPort.default('127.0.0.1:8227'),
      auth_public_key: z
        .string()
        .regex(/^ed25519\/[0-9a-fA-F]{64}$/, { error: 'expected ed25519/<64 hex chars>' })
        .optional(),
      auth_revoked_ids: z.array(z.string().regex(/^[0-9a-fA-F]+$/)).default([]),
      enabled_modules: z.array(z.enum(MODULE_NAMES)).default(DEFAULT_MODULES),
      cors_enabled: z.boolean().default(false),
      cors_allowed_origins: z.array(z.string()).default([]),
      max_request_body_size: uintNum.default(10 * 1024 * 1024),
      /** Strand: serve the web dashboard at `/dashboard/` on the RPC address. */
      dashboard: z.boolean().default(false),
      /** Output names: the seed's (default) or fnn v0.8's (`rpc/compat.ts`). */
      compat: z.enum(['seed', 'fnn-0.8'], { error: 'expected seed or fnn-0.8' }).default('seed'),
    })
    .prefault({}),
  fiber: z
    .object({
      base_dir: z.string().optional(),
      listening_addr: z.string().default('/ip4/127.0.0.1/tcp/8228'),
      announce_listening_addr: z.boolean().default(false),
      announce_private_addr: z.boolean().default(false),
      announced_addrs: z.array(z.string()).default([]),
      bootnode_addrs: z.array(z.string()).default([]),
      announced_node_name: z.string().max(32, { error: 'at most 32 bytes' }).optional(),
      chain: z.string().default('dev'),
      scripts: z.array(z.unknown()).default([]),
      open_channel_auto_accept_min_ckb_funding_amount: shannons.default(100n * CKB),
      auto_accept_channel_ckb_funding_amount: shannons.default(99n * CKB),
      tlc_expiry_delta: uintUpTo(U64_MAX, 'u64 milliseconds').default(14_400_000n),
      tlc_min_value: uintUpTo(U128_MAX, 'u128').default(0n),
      // Gossiped in every ChannelUpdate: the same 100% bound as the RPC's.
      tlc_fee_proportional_millionths: uintUpTo(MAX_FEE_PROPORTIONAL_MILLIONTHS, 'a fee of 100%').default(
        1000n,
      ),
      auto_announce_node: z.boolean().default(true),
      announce_node_interval_seconds: uintNum.default(3600),
      gossip_network_maintenance_interval_ms: uintNum.default(60_000),
      gossip_store_maintenance_interval_ms: uintNum.default(20_000),
      max_inbound_peers: uintNum.default(16),
      min_outbound_peers: uintNum.default(8),
      sync_network_graph: z.boolean().default(true),
      watchtower_check_interval_seconds: uintNum.default(60),
      standalone_watchtower_rpc_url: z.url().optional(),
      standalone_watchtower_token: z.string().optional(),
      disable_built_in_watchtower: z.boolean().default(false),
      to_be_accepted_channels_number_limit: uintNum.default(20),
      to_be_accepted_channels_bytes_limit: uintNum.default(51_200),
      funding_timeout_seconds: uintNum.default(86_400),
      external_funding_timeout_seconds: uintNum.default(300),
      reuse_port_for_websocket: z.boolean().default(true),
      /** Prometheus `/metrics` (fnn's `metrics` feature); off when unset. */
      metrics_addr: hostPort.optional(),
      // Strand extensions (constants in fnn): TLC expiry checks and the peer response timeout.
      /**
       * Milliseconds of one epoch (fnn's compile-time MILLI_SECONDS_PER_EPOCH): the least TLC
       * expiry delta is 2/3 of it (`codec/epoch-rules.ts`). Unset: 4 h for that bound; the TLC
       * expiry checks' margin takes 4 h on mainnet/testnet and 2 s on a dev chain.
       */
      milli_seconds_per_epoch: positiveNum.optional(),
      /** How often channels' TLCs are checked against their expiry (fnn's CHECK_CHANNELS_INTERVAL). */
      check_channels_interval_ms: positiveNum.default(60_000),
      /** An unanswered TLC round drops the peer's session after this long (PEER_CHANNEL_RESPONSE_TIMEOUT). */
      peer_response_timeout_ms: uintNum.default(30_000),
      /**
       * Strand-only: offer pipelined TLC updates (docs/pipelined-commitments.md) in `Init`; a
       * channel opened with a peer that offers them too runs them. Off by default.
       */
      pipelined_updates: z.boolean().default(false),
    })
    .prefault({}),
  ckb: z
    .object({
      base_dir: z.string().optional(),
      rpc_url: z.url().default('http://127.0.0.1:8114'),
      udt_whitelist: z.array(udtEntry).default([]),
      /** How often the channels poll the chain for their transactions; unset: every second (fnn: 4000). */
      tx_tracing_polling_interval_ms: positiveNum.optional(),
      funding_tx_shell_builder: z.string().optional(),
    })
    .prefault({}),
  /** The cross-chain hub; required when `services` lists `cch` (`cch/config.ts`). */
  cch: cchSection.optional(),
});

export type Config = Omit<z.output<typeof schema>, 'network'> & {
  /** The network preset in force (`network`, or what `fiber.chain` means). */
  network: NetworkName;
  /** Resolved base directory (`-d`). */
  baseDir: string;
  /** Resolved `fiber.base_dir` and `ckb.base_dir`. */
  fiberDir: string;
  ckbDir: string;
};

export interface LoadOptions {
  /** `-d`: base directory. */
  dir: string;
  /** `-c`: config file; when absent, `<dir>/config.yml` is read if it exists. */
  configFile?: string;
  /** Environment (defaults to process.env). */
  env?: Record<string, string | undefined>;
  /** Flag values by flag name without dashes (`rpc-listening-addr` → value), as given. */
  flags?: Record<string, string | boolean | undefined>;
}

export function loadConfig(opts: LoadOptions): Config {
  const env = opts.env ?? process.env;
  const file = opts.configFile ?? path.join(opts.dir, 'config.yml');
  let raw: Record<string, unknown> = {};
  if (fs.existsSync(file)) {
    raw = readYaml(file);
  } else if (opts.configFile) {
    throw new ConfigError(`config file ${file} does not exist`);
  }
  for (const def of CONFIG_FIELDS) {
    for (const alias of def.fileAliases ?? []) {
      const v = getPath(raw, alias);
      if (v !== undefined && getPath(raw, def.path) === undefined) setPath(raw, def.path, v);
    }
    const fromEnv = firstDefined(envNames(def).map((n) => [n, env[n]] as const));
    if (fromEnv) setPath(raw, def.path, parseText(def, fromEnv[1], `environment variable ${fromEnv[0]}`));
    const fromFlag = firstDefined(flagNames(def).map((n) => [n, opts.flags?.[n]] as const));
    if (fromFlag) setPath(raw, def.path, parseText(def, fromFlag[1], `flag --${fromFlag[0]}`));
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.join('.') || '(root)';
    throw new ConfigError(`invalid configuration: ${where}: ${issue.message}`);
  }
  const cfg = parsed.data;
  const network = applyNetwork(cfg, raw);
  try {
    readUdtWhitelist(cfg.ckb.udt_whitelist);
    readScriptsConfig(cfg.fiber.scripts);
  } catch (e) {
    if (e instanceof UdtWhitelistError) throw new ConfigError(`invalid configuration: ckb.${e.message}`);
    if (e instanceof ScriptsConfigError) throw new ConfigError(`invalid configuration: fiber.${e.message}`);
    throw e;
  }
  const baseDir = path.resolve(opts.dir);
  if (cfg.services.includes('cch')) {
    try {
      resolveCchConfig(cfg.cch, baseDir);
    } catch (e) {
      throw new ConfigError(`invalid configuration: ${(e as Error).message}`);
    }
  }
  return {
    ...cfg,
    network,
    baseDir,
    fiberDir: path.resolve(baseDir, cfg.fiber.base_dir ?? 'fiber'),
    ckbDir: path.resolve(baseDir, cfg.ckb.base_dir ?? 'ckb'),
  };
}

/**
 * The network preset: `network` sets `fiber.chain` and the defaults of `ckb.rpc_url` and
 * `ckb.udt_whitelist` (fields the configuration leaves unset); without it, `fiber.chain` names
 * the network. A `fiber.chain` that says another network than `network` is refused.
 */
function applyNetwork(cfg: z.output<typeof schema>, raw: Record<string, unknown>): NetworkName {
  const chainSet = getPath(raw, 'fiber.chain') !== undefined;
  const network = cfg.network ?? networkOfChain(cfg.fiber.chain);
  if (cfg.network && chainSet && networkOfChain(cfg.fiber.chain) !== network)
    throw new ConfigError(
      `invalid configuration: fiber.chain: '${cfg.fiber.chain}' is not the ${network} network that network names`,
    );
  const preset = NETWORKS[network];
  if (!chainSet && network !== 'dev') cfg.fiber.chain = network;
  if (getPath(raw, 'ckb.rpc_url') === undefined) cfg.ckb.rpc_url = preset.defaultRpcUrl;
  if (getPath(raw, 'ckb.udt_whitelist') === undefined)
    cfg.ckb.udt_whitelist = z.array(udtEntry).parse(preset.udtWhitelist);
  return network;
}

function readYaml(file: string): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = YAML.parse(fs.readFileSync(file, 'utf8'), { intAsBigInt: true });
  } catch (e) {
    throw new ConfigError(`config file ${file} is not valid YAML: ${(e as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigError(`config file ${file} must be a mapping`);
  return bigintsToNumbersWhereSafe(doc) as Record<string, unknown>;
}

/** Converts bigints that fit to numbers, except that the schema re-widens amount fields. */
function bigintsToNumbersWhereSafe(v: unknown): unknown {
  if (typeof v === 'bigint')
    return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  if (Array.isArray(v)) return v.map(bigintsToNumbersWhereSafe);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, bigintsToNumbersWhereSafe(x)]));
  }
  return v;
}

function parseText(def: FieldDef, value: string | boolean, source: string): unknown {
  const fail = (what: string): never => {
    throw new ConfigError(`invalid configuration: ${def.path}: ${source}: expected ${what}, got '${value}'`);
  };
  if (typeof value === 'boolean') return def.kind === 'bool' ? value : fail(def.kind);
  switch (def.kind) {
    case 'string':
      return value;
    case 'bool':
      if (/^(true|1|yes)$/i.test(value)) return true;
      if (/^(false|0|no)$/i.test(value)) return false;
      return fail('true or false');
    case 'uint':
      if (!/^(\d+|0x[0-9a-fA-F]+)$/.test(value)) return fail('a non-negative integer');
      return BigInt(value);
    case 'list':
      return value
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
    case 'json':
      try {
        return JSON.parse(value);
      } catch {
        return fail('JSON');
      }
  }
}

function firstDefined<T>(pairs: (readonly [string, T | undefined])[]): readonly [string, T] | undefined {
  return pairs.find(([, v]) => v !== undefined) as readonly [string, T] | undefined;
}

function getPath(obj: Record<string, unknown>, dotted: string): unknown {
  let cur: unknown = obj;
  for (const part of dotted.split('.')) {
    if (!cur || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function setPath(obj: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) {
    const next = cur[part];
    if (!next || typeof next !== 'object') cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  cur[parts.at(-1)!] = value;
}

/** The invoice currency of a chain setting: fnn's rule. */
export function currencyOf(chain: string): 'Fibb' | 'Fibt' | 'Fibd' {
  if (chain === 'mainnet') return 'Fibb';
  if (chain === 'testnet') return 'Fibt';
  return 'Fibd';
}
