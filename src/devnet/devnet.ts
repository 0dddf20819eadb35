/**
 * `strand devnet`: a local payment network on one machine — the embedded dev chain and N nodes,
 * each a separate process with its own directory, keys, funded wallet (CKB, the test UDT and the
 * test xUDT, both whitelisted in every node's config) and ports — then the peers and channels of a topology. `<dir>/devnet.json` describes the network
 * for scripts and tests. Restarting on the same directory keeps all state.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { bytesToHex, SHANNONS_PER_CKB as CKB, toHexQuantity } from '../codec/index.ts';
import {
  blake160,
  identityFromSecret,
  loadOrCreateNodeKey,
  loadWalletKey,
  publicKeyOf,
} from '../crypto/index.ts';
import { createRpcClient, MODULE_NAMES, RpcCallError, type RpcClient } from '../rpc/index.ts';
import { prepareSchemas, redactedUrl, urlWithSchema } from '../store/index.ts';
import { type DevnetLightning, startDevnetLightning, withSwapChannels } from './cch.ts';
import { type Child, spawnStrand, stopChild } from './supervisor.ts';
import { checkTopology, defaultTopology, type Topology } from './topology.ts';

/** The wallet password of devnet nodes: a dev network holds no real money. */
export const DEVNET_PASSWORD = 'strand-devnet';
const NAMES = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi'];
const WALLET_CKB = 100_000n;
const WALLET_UDT = 1_000_000_000n;
const WALLET_CELLS = 10n;

export interface DevnetOptions {
  dir: string;
  nodes: number;
  blockIntervalMs: number;
  /** Blocks per epoch of a new chain (short epochs make commitment delays short; tests). */
  epochLength?: number;
  /**
   * The chain listens here; node i uses RPC basePort+113+10i, P2P basePort+114+10i and metrics
   * basePort+115+10i (8227/8228/8229 first).
   */
  basePort: number;
  topology?: Topology;
  reset: boolean;
  /** The first node runs the cross-chain hub, with the LND double as its Lightning node. */
  cch?: boolean;
  /** The LND double's port with `cch` (its control endpoint: the next one); default 10009. */
  lndPort?: number;
  /** The `store:` section of a node's config (e.g. `{ url: 'postgres://…' }`); unset: SQLite. */
  store?: (node: string) => Record<string, unknown>;
  /**
   * `--store-url`: every node's store in this Postgres database, one schema each
   * (`devnet_<name>`). Unset on a restart: the database the devnet used before, if any.
   */
  storeUrl?: string;
  /** Every node offers pipelined TLC updates (`fiber.pipelined_updates`). */
  pipelined?: boolean;
  log: (line: string) => void;
}

export interface DevnetNodeInfo {
  name: string;
  rpc_url: string;
  /** Prometheus metrics of the node (`fiber.metrics_addr`). */
  metrics_url: string;
  p2p_address: string;
  pubkey: string;
  peer_id: string;
  dir: string;
  wallet_lock_args: string;
  /** The node's store on Postgres (`--store-url`); absent: its SQLite file. */
  store_url?: string;
}

export interface DevnetDescription {
  chain: { rpc_url: string; chain_hash: string; dir: string };
  nodes: DevnetNodeInfo[];
  /** `--store-url`: the Postgres database holding the nodes' stores (a schema each). */
  store_url?: string;
}

export interface RunningDevnet {
  description: DevnetDescription;
  /** Resolves when a child dies unexpectedly, with its name and exit status. */
  crashed: Promise<string>;
  /**
   * Stops one node with `signal` (SIGKILL: a crash at an arbitrary instant) and starts it again on
   * the same directory; resolves once its RPC answers. Its exit is not reported as a crash.
   */
  restartNode(name: string, signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

export function nodeNames(n: number): string[] {
  return Array.from({ length: n }, (_, i) => NAMES[i] ?? `node${i}`);
}

export async function startDevnet(opts: DevnetOptions): Promise<RunningDevnet> {
  const { dir, log } = opts;
  if (opts.reset) fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const fresh = !fs.existsSync(path.join(dir, 'chain'));
  const names = nodeNames(opts.nodes);
  let topology = opts.topology ?? defaultTopology(names);
  if (opts.cch) {
    if (names.length < 2) throw new Error('--cch needs at least 2 nodes');
    topology = withSwapChannels(topology, names[0]!, names[1]!);
  }
  checkTopology(topology, names);
  const storeUrl = await devnetStore(opts, dir, fresh, names);
  let lightning: DevnetLightning | undefined;

  const children: Child[] = [];
  let onCrash: (what: string) => void = () => {};
  const crashed = new Promise<string>((resolve) => {
    onCrash = resolve;
  });
  const watch = (child: Child) => {
    children.push(child);
    child.proc.once('exit', (code, signal) => {
      // Give a concurrent Ctrl-C (delivered to the whole group) time to mark the stop as wanted.
      setTimeout(() => {
        if (!child.stopping)
          onCrash(`${child.name} exited (${signal ?? `code ${code}`}); its log: ${child.logFile}`);
      }, 300);
    });
  };
  const stop = async () => {
    // A terminal's Ctrl-C reaches every process of the group at once: from here on, no exit is
    // a crash. Nodes first, the chain last: nodes may still talk to it while shutting down.
    for (const c of children) c.stopping = true;
    for (const c of [...children].reverse()) await stopChild(c);
    await lightning?.stop();
  };

  try {
    // 1. Keys of every node (created once, kept across restarts).
    const nodes = names.map((name, i) => {
      const nodeDir = path.join(dir, name);
      const id = identityFromSecret(loadOrCreateNodeKey(path.join(nodeDir, 'fiber', 'sk')));
      const wallet = loadWalletKey(path.join(nodeDir, 'ckb', 'key'), { password: DEVNET_PASSWORD });
      const lockArgs = bytesToHex(blake160(publicKeyOf(wallet)));
      return {
        name,
        nodeDir,
        id,
        lockArgs,
        rpcPort: opts.basePort + 113 + 10 * i,
        p2pPort: opts.basePort + 114 + 10 * i,
        metricsPort: opts.basePort + 115 + 10 * i,
      };
    });
    log(`keys: ${nodes.length} nodes in ${dir}`);

    // 2. The chain, funding every wallet at creation.
    const chainDir = path.join(dir, 'chain');
    // Wallets are funded when the chain is created; a restarted chain keeps its state.
    // Several cells per wallet: a wallet can then fund several channels at once (each funding
    // transaction locks the cells it spends until it is on chain).
    const fund = fresh
      ? nodes.flatMap((n) => [
          ...['--fund', `${n.lockArgs}:${WALLET_CKB / WALLET_CELLS}:${WALLET_UDT}:${WALLET_UDT}`],
          ...Array.from({ length: Number(WALLET_CELLS) - 1 }, () => [
            '--fund',
            `${n.lockArgs}:${WALLET_CKB / WALLET_CELLS}`,
          ]).flat(),
        ])
      : [];
    const chainStart = await spawnStrand({
      name: 'devchain',
      args: [
        'devchain',
        '-d',
        chainDir,
        '--listen',
        `127.0.0.1:${opts.basePort}`,
        '--block-interval',
        String(opts.blockIntervalMs),
        // Strand's spec: the Fiber scripts in genesis tx0 outputs 6–8, where a reference node
        // (fnn, fiber-js) on a dev chain looks for them, so it can join this network.
        ...(fresh ? ['--spec', 'strand'] : []),
        ...(fresh && opts.epochLength ? ['--epoch-length', String(opts.epochLength)] : []),
        ...fund,
      ],
      logFile: path.join(dir, 'chain.log'),
      ready: /devchain rpc (\S+)\nchain hash (\S+)\ntip \S+\nscripts (.*)\n/,
    });
    watch(chainStart.child);
    const chainUrl = chainStart.match[1]!;
    const chainHash = chainStart.match[2]!;
    const scripts = JSON.parse(chainStart.match[3]!);
    log(
      `chain: ${chainUrl} (genesis ${chainHash})${fresh ? `, wallets funded with ${WALLET_CKB} CKB, ${WALLET_UDT} test UDT and ${WALLET_UDT} test xUDT` : ''}`,
    );

    // 3. The nodes.
    const described: DevnetNodeInfo[] = [];
    const clients = new Map<string, RpcClient>();
    const startNode = async (n: (typeof nodes)[number]) => {
      const started = await spawnStrand({
        name: n.name,
        args: ['node', '-d', n.nodeDir],
        env: { FIBER_SECRET_KEY_PASSWORD: DEVNET_PASSWORD },
        logFile: path.join(n.nodeDir, 'node.log'),
        ready: /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"rpc server listening"/,
      });
      watch(started.child);
      return started.match[1]!;
    };
    const restartNode = async (name: string, signal: NodeJS.Signals = 'SIGKILL') => {
      const n = nodes.find((x) => x.name === name);
      const child = children.find(
        (c) => c.name === name && c.proc.exitCode === null && c.proc.signalCode === null,
      );
      if (!n || !child) throw new Error(`no running node named ${name}`);
      await stopChild(child, 10_000, signal);
      children.splice(children.indexOf(child), 1);
      await startNode(n);
    };
    if (opts.cch) {
      lightning = await startDevnetLightning(dir, opts.lndPort ?? 10009);
      log(`lightning: LND double at ${lightning.lndUrl}; outside payer and payee at ${lightning.controlUrl}`);
    }
    for (const [i, n] of nodes.entries()) {
      const cch = i === 0 ? lightning?.cchSection(testUdtScript(scripts)) : undefined;
      const nodeStoreUrl = storeUrl ? urlWithSchema(storeUrl, storeSchema(n.name)) : undefined;
      const store = nodeStoreUrl ? { url: nodeStoreUrl } : opts.store?.(n.name);
      writeNodeConfig(n.nodeDir, { ...n, chainUrl, scripts, cch, store, pipelined: opts.pipelined });
      if (cch) log(`cch: ${n.name} runs the cross-chain hub (wrapped BTC: the test UDT)`);
      const rpcUrl = await startNode(n);
      clients.set(n.name, createRpcClient(rpcUrl));
      described.push({
        name: n.name,
        rpc_url: rpcUrl,
        metrics_url: `http://127.0.0.1:${n.metricsPort}/metrics`,
        p2p_address: `/ip4/127.0.0.1/tcp/${n.p2pPort}/p2p/${n.id.peerId}`,
        pubkey: n.id.pubkeyHex,
        peer_id: n.id.peerId,
        dir: n.nodeDir,
        wallet_lock_args: n.lockArgs,
        ...(nodeStoreUrl ? { store_url: nodeStoreUrl } : {}),
      });
      log(`node ${n.name}: rpc ${rpcUrl}, p2p ${n.p2pPort}, dashboard ${rpcUrl}/dashboard/`);
    }

    const description: DevnetDescription = {
      chain: { rpc_url: chainUrl, chain_hash: chainHash, dir: chainDir },
      nodes: described,
      ...(storeUrl ? { store_url: storeUrl } : {}),
    };
    fs.writeFileSync(path.join(dir, 'devnet.json'), `${JSON.stringify(description, null, 2)}\n`);

    // 4. Peers and channels.
    const byName = new Map(described.map((d) => [d.name, d]));
    for (const [a, b] of topology.peers) {
      await clients
        .get(a)!
        .call('connect_peer', { address: byName.get(b)!.p2p_address })
        // A peer already connected is no error (connect_peer answers null, as fnn does): any is a failure.
        .catch((e: Error) => {
          throw new Error(`connect ${a} → ${b}: ${e.message}`);
        });
      log(`peers: ${a} ↔ ${b}`);
    }
    await openChannels(topology, clients, byName, scripts, log);
    return { description, crashed, restartNode, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The Postgres schema of a devnet node's store. */
export const storeSchema = (node: string) => `devnet_${node}`;

/**
 * Where the nodes keep their stores: undefined for their SQLite files, else the Postgres
 * database, its schemas made ready (dropped first for a new network). A restarted network keeps
 * the stores it had: the database it used before (recorded in devnet.json) unless `--store-url`
 * names one, and never another store than before (its channels and payments are there).
 */
async function devnetStore(
  opts: DevnetOptions,
  dir: string,
  fresh: boolean,
  names: string[],
): Promise<string | undefined> {
  const file = path.join(dir, 'devnet.json');
  const before =
    !fresh && fs.existsSync(file)
      ? (JSON.parse(fs.readFileSync(file, 'utf8')) as DevnetDescription)
      : undefined;
  const previous = before ? (before.store_url ?? 'sqlite') : undefined;
  const wanted = opts.storeUrl ?? (previous !== 'sqlite' ? previous : undefined);
  if (previous && opts.storeUrl && opts.storeUrl !== previous)
    throw new Error(
      previous === 'sqlite'
        ? `this devnet's nodes keep their stores in SQLite files; --reset to start afresh on ${redactedUrl(opts.storeUrl)} (or move each node with strand store migrate)`
        : `this devnet's nodes keep their stores in ${redactedUrl(previous)}; --reset to start afresh on ${redactedUrl(opts.storeUrl)}`,
    );
  if (!wanted) return undefined;
  const schemas = names.map(storeSchema);
  await prepareSchemas(wanted, schemas, { fresh });
  opts.log(
    `store: Postgres ${redactedUrl(wanted)}${opts.storeUrl ? '' : ' (as before)'}, one schema per node (${schemas.join(', ')})${fresh ? ', emptied for the new network' : ''}`,
  );
  return wanted;
}

/** A script with its cell deps, in CKB JSON, as `strand devchain` prints them. */
interface ScriptWithDeps {
  script: { code_hash: string; hash_type: string; args: string };
  cell_deps: { out_point: { tx_hash: string; index: string }; dep_type: string }[];
}

interface NodeSetup {
  name: string;
  rpcPort: number;
  p2pPort: number;
  metricsPort: number;
  chainUrl: string;
  scripts: { test_udt: ScriptWithDeps; test_xudt: ScriptWithDeps };
}

/** The token of a topology channel: the test UDT (`udt: true`) or the test xUDT (`udt: xudt`). */
export function testUdtScript(scripts: NodeSetup['scripts'], token: true | 'xudt' = true) {
  return (token === 'xudt' ? scripts.test_xudt : scripts.test_udt).script;
}

/** Both test tokens as `ckb.udt_whitelist` entries (a node auto-accepts 1000 units of either). */
export function testTokenWhitelist(scripts: NodeSetup['scripts']) {
  const entry = (name: string, t: ScriptWithDeps) => ({
    name,
    script: t.script,
    cell_deps: t.cell_deps.map((d) => ({ cell_dep: d })),
    auto_accept_amount: 1000,
  });
  return [entry('test-udt', scripts.test_udt), entry('test-xudt', scripts.test_xudt)];
}

function writeNodeConfig(
  nodeDir: string,
  n: NodeSetup & { cch?: Record<string, unknown>; store?: Record<string, unknown>; pipelined?: boolean },
): void {
  const config = {
    services: n.cch ? ['fiber', 'rpc', 'ckb', 'cch'] : ['fiber', 'rpc', 'ckb'],
    ...(n.cch ? { cch: n.cch } : {}),
    ...(n.store ? { store: n.store } : {}),
    fiber: {
      listening_addr: `/ip4/127.0.0.1/tcp/${n.p2pPort}`,
      chain: 'dev',
      announced_node_name: n.name,
      // Loopback addresses are all a devnet has: announce them, or peers drop the announcements.
      announce_listening_addr: true,
      announce_private_addr: true,
      // The seed's example: a node auto-accepts 100 CKB or more and adds 250 CKB of its own.
      open_channel_auto_accept_min_ckb_funding_amount: Number(100n * CKB),
      auto_accept_channel_ckb_funding_amount: Number(250n * CKB),
      metrics_addr: `127.0.0.1:${n.metricsPort}`,
      ...(n.pipelined ? { pipelined_updates: true } : {}),
    },
    rpc: {
      listening_addr: `127.0.0.1:${n.rpcPort}`,
      dashboard: true,
      // Every module: a devnet is for trying things.
      enabled_modules: [...MODULE_NAMES],
    },
    ckb: {
      rpc_url: n.chainUrl,
      tx_tracing_polling_interval_ms: 500,
      udt_whitelist: testTokenWhitelist(n.scripts),
    },
  };
  fs.writeFileSync(path.join(nodeDir, 'config.yml'), YAML.stringify(config));
}

async function openChannels(
  topology: Topology,
  clients: Map<string, RpcClient>,
  byName: Map<string, DevnetNodeInfo>,
  scripts: NodeSetup['scripts'],
  log: (line: string) => void,
): Promise<void> {
  const pending: { from: string; to: string }[] = [];
  for (const c of topology.channels) {
    const client = clients.get(c.from)!;
    const peer = byName.get(c.to)!;
    const existing = await client
      .call('list_channels', { peer_id: peer.peer_id })
      .catch((e: RpcCallError) => e);
    if (existing instanceof RpcCallError) {
      if (existing.code === -32601) {
        log('channels: this build has no channel module yet; skipping the topology channels');
        return;
      }
      throw new Error(`list_channels on ${c.from}: ${existing.message}`);
    }
    // One channel per direction and asset: a CKB channel does not stand for a token one, nor one
    // the peer opened for one this node opens.
    type Listed = { is_acceptor: boolean; funding_udt_type_script?: { code_hash: string } | null };
    const sameAsset = (existing.channels as Listed[]).filter(
      (ch) =>
        !ch.is_acceptor &&
        (ch.funding_udt_type_script?.code_hash ?? null) ===
          (c.udt ? testUdtScript(scripts, c.udt).code_hash : null),
    );
    if (sameAsset.length > 0) {
      log(`channel: ${c.from} → ${c.to} exists`);
      continue;
    }
    const unit = c.udt ? 1n : CKB;
    await client.call('open_channel', {
      peer_id: peer.peer_id,
      pubkey: peer.pubkey,
      funding_amount: toHexQuantity(BigInt(Math.round(c.funding)) * unit),
      public: c.public,
      ...(c.udt ? { funding_udt_type_script: testUdtScript(scripts, c.udt) } : {}),
      ...(c.fee_ppm !== undefined ? { tlc_fee_proportional_millionths: toHexQuantity(c.fee_ppm) } : {}),
    });
    pending.push({ from: c.from, to: c.to });
    const unitName = c.udt === 'xudt' ? 'test xUDT' : c.udt ? 'test UDT' : 'CKB';
    log(`channel: ${c.from} → ${c.to} opening (${c.funding} ${unitName})`);
  }
  for (const p of pending) {
    const client = clients.get(p.from)!;
    const peer = byName.get(p.to)!;
    const started = Date.now();
    const deadline = started + 120_000;
    let nextProgress = started + 5000;
    for (;;) {
      const { channels } = await client.call('list_channels', { peer_id: peer.peer_id });
      const states = (channels as { state: { state_name: string } }[]).map((ch) => ch.state.state_name);
      // Every channel with that peer (one per asset and direction) ready.
      if (states.length > 0 && states.every((st) => st === 'CHANNEL_READY')) break;
      if (Date.now() > deadline) throw new Error(`channel ${p.from} → ${p.to} not ready after 120 s`);
      // Funding waits for blocks: say where it stands every few seconds.
      if (Date.now() >= nextProgress) {
        const waited = Math.round((Date.now() - started) / 1000);
        log(
          `channel: ${p.from} → ${p.to} ${states.find((st) => st !== 'CHANNEL_READY') ?? 'not listed yet'} (${waited} s)…`,
        );
        nextProgress += 5000;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    log(`channel: ${p.from} → ${p.to} CHANNEL_READY`);
  }
}

/** The table printed when the network is up. */
export function formatDevnet(d: DevnetDescription): string {
  const rows = [
    ['node', 'rpc url', 'peer address', 'pubkey'],
    ...d.nodes.map((n) => [n.name, n.rpc_url, n.p2p_address, n.pubkey]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd(),
  );
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  return `${lines.join('\n')}\n\nchain rpc: ${d.chain.rpc_url}  (genesis ${d.chain.chain_hash})`;
}
