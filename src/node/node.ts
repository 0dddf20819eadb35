/**
 * The composition root: builds one node from its configuration — keys, store, services, RPC —
 * and tears it down in the reverse order. Nothing else imports `node/`.
 *
 * Longer than the house's ~600 lines on purpose: the start order (store, chain, peers, graph,
 * channels, payments, watchtower, cch, RPC) and its reverse are the one thing this file says, and
 * reading it in one place is the point; each step's work lives in the service it starts.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { CchService } from '../cch/index.ts';
import {
  type ChainClient,
  channelScriptsSource,
  createChainClient,
  createWallet,
  describeChainStatus,
  NETWORKS,
  readScriptsConfig,
  readUdtWhitelist,
  resolveUdtWhitelist,
  SIGHASH_ALL_TYPE_HASH,
  startChainProbe,
  type UdtWhitelist,
  type Wallet,
} from '../chain/index.ts';
import { ChannelService, checkpointBackupStore, loadChannelScripts, NoncePool } from '../channel/index.ts';
import { bytesToHex, hexToBytes } from '../codec/index.ts';
import {
  blake160,
  curveBackend,
  hashReady,
  identityFromSecret,
  loadOrCreateNodeKey,
  loadWalletKey,
  type NodeIdentity,
  PASSWORD_ENV,
  publicKeyOf,
  startCurveWorker,
} from '../crypto/index.ts';
import {
  createChainFundingChecker,
  createGraphService,
  featureBytes,
  type GraphService,
  udtCfgInfosFromWhitelist,
} from '../graph/index.ts';
import { createInvoiceService, type InvoiceService } from '../invoice/index.ts';
import { createPeerManager, initFeatures, type PeerManager } from '../p2p/index.ts';
import type { PaymentRelay, PaymentService } from '../payment/index.ts';
import type { MethodSpec, ScriptJson } from '../rpc/index.ts';
import {
  adminMethods,
  applyCompat,
  assertBindAllowed,
  cchMethods,
  channelExternalFundingMethods,
  channelMethods,
  createAuthorizer,
  createRpcClient,
  devMethods,
  discoverMethod,
  externalFundingMethods,
  graphMethods,
  infoMethods,
  invoiceMethods,
  OPEN_ACCESS,
  paymentMethods,
  peerMethods,
  profMethods,
  pubsubMethods,
  type RouteBuilder,
  type RpcServer,
  startRpcServer,
  watchtowerMethods,
} from '../rpc/index.ts';
import {
  type BackupResult,
  backupNode,
  type Checkpointer,
  checkNodeOwnership,
  type Db,
  type Durability,
  IMMEDIATE_DURABILITY,
  isSqlite,
  type LeaseLossCause,
  type LeaseOptions,
  openStore,
  PgDb,
  StoreChangeBus,
  startCheckpointer,
  TurnTransactionDb,
  WalDurability,
  watchPageQuota,
} from '../store/index.ts';
import {
  fulfilReceivedTlcs,
  startNodeWatchtower,
  startWatchtowerFeed,
  type Watchtower,
  type WatchtowerFeed,
  WatchtowerStore,
} from '../watchtower/index.ts';
import { COMMIT_HASH, VERSION } from './build-info.ts';
import { startCch } from './cch.ts';
import { broadcastOwnPolicy, channelAnnouncementHooks, channelClosingHook } from './channel-announcements.ts';
import { type Config, currencyOf } from './config.ts';
import { createLogger, type Logger } from './log.ts';
import { NodeObservers } from './observers.ts';
import { syncOwnChannels, wirePayments } from './payments.ts';
import { nodeRules } from './rules.ts';
import { NODE_SCHEMAS } from './store-schemas.ts';

/** How long a starting node waits for an unreachable chain before giving up. */
const CHAIN_STARTUP_TIMEOUT_MS = 30_000;

/**
 * How long services get to stop in order (in-flight payments, channel queues, peers) before the
 * store is closed regardless: SIGTERM must end the node within 10 s on every path, the log flush
 * included. Committed state is safe either way (WAL, `synchronous=FULL`).
 */
export const STOP_DEADLINE_MS = 7_000;

/** Feature bits this build advertises (names of fiber-rpc.md §2.9). */
export const NODE_FEATURES: string[] = [
  'GOSSIP_QUERIES_OPTIONAL',
  'BASIC_MPP_OPTIONAL',
  'TRAMPOLINE_ROUTING_OPTIONAL',
];

/** Dev and test only: a file holding a page cap for the store (see `watchPageQuota`). */
export const STORE_QUOTA_ENV = 'STRAND_DEV_STORE_QUOTA_FILE';

export interface StartOptions {
  env?: Record<string, string | undefined>;
  logger?: Logger;
  /**
   * The Postgres leader lease was lost (another node may take over any moment): default, exit
   * the process at once, before anything else is written.
   */
  onLeaseLost?: (reason: string, cause: LeaseLossCause) => void;
}

/**
 * The lease of a node on Postgres: one holder per node key. A second process waits as a standby
 * (logged once) and starts once the first stopped or its lease ran out; a holder that could not
 * renew in time exits, as another may already be writing.
 */
function leaderLease(
  config: Config,
  pubkey: string,
  log: Logger,
  onLost?: (reason: string, cause: LeaseLossCause) => void,
): LeaseOptions {
  const holder = `${os.hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  return {
    key: pubkey,
    holder,
    ttlMs: config.store.lease_ms,
    onStandby: (current) =>
      log.warn(
        { holder: current, lease_ms: config.store.lease_ms },
        'standby: another node holds the leader lease',
      ),
    onLost:
      onLost ??
      ((reason, cause) => {
        log.fatal(
          { reason, cause },
          cause === 'store_timeout' ? 'store did not answer in time: exiting' : 'leader lease lost: exiting',
        );
        log.flush();
        process.exit(3);
      }),
  };
}

/**
 * A flush of the store failed: pages the kernel was given may be gone, and the node cannot say
 * which state it will find after a restart. Stop before anything else leaves (PostgreSQL does the
 * same on a failed fsync); the restart recovers from what is on disk.
 */
/** A commit or flush failed: what the node took as stored may not be, so it stops at once. */
function storeFailed(log: Logger, what: string): (err: Error) => void {
  return (err) => {
    log.fatal({ err: err.message }, `${what} failed: exiting`);
    log.flush();
    process.exit(70);
  };
}

export class StrandNode {
  private rpc?: RpcServer;
  /** When a commit is on disk; every outgoing byte waits for it (persist-before-speak). */
  durability: Durability = IMMEDIATE_DURABILITY;
  private stopped = false;
  private stopQuota?: () => void;
  /** SQLite: the WAL's checkpoints, on a worker thread (`store/checkpointer.ts`). */
  checkpointer?: Checkpointer;
  /** Channel nonces made ahead, their points on a worker thread (`channel/nonce-pool.ts`). */
  private nonces?: NoncePool;
  private fundingLock?: ScriptJson;
  private invoiceService?: InvoiceService;
  /** Committed store changes, for `store_changes` subscribers. */
  readonly changes: StoreChangeBus;
  /** The CKB chain (present when the `ckb` service runs). */
  chain?: ChainClient;
  /** The node's on-chain wallet (present with the chain and a wallet key). */
  wallet?: Wallet;
  private knownChainHash?: string;
  private stopChainProbe?: () => void;
  /** P2P: sessions with peers (present when the `fiber` service runs). */
  peers?: PeerManager;
  /** Channels (present with peers, a chain that has the channel scripts, and a wallet). */
  channels?: ChannelService;
  /** Payment sessions (present with channels). */
  payments?: PaymentService;
  private paymentRelay?: PaymentRelay;
  private stopPayments?: () => void;
  /** Gossip, the network graph and path-finding (present with the `fiber` service). */
  graph?: GraphService;
  /** The built-in watchtower (with a chain and a wallet, unless `fiber.disable_built_in_watchtower`). */
  watchtower?: Watchtower;
  private watchtowerFeed?: WatchtowerFeed;
  /** `ckb.udt_whitelist`, read once for the channels, the gossip and the watchtower (type-id deps resolved once connected). */
  private udtWhitelist: UdtWhitelist;
  /** The event log and, with `fiber.metrics_addr`, the Prometheus metrics. */
  readonly observers: NodeObservers;
  /** The cross-chain hub (with the `cch` service). */
  cch?: CchService;

  private constructor(
    readonly config: Config,
    readonly identity: NodeIdentity,
    readonly walletKey: Uint8Array | undefined,
    readonly db: Db,
    readonly log: Logger,
  ) {
    this.changes = new StoreChangeBus((err) => log.error({ err }, 'store change listener failed'));
    this.udtWhitelist = readUdtWhitelist(config.ckb.udt_whitelist);
    this.observers = new NodeObservers(db, log, config.fiber.metrics_addr);
    this.changes.subscribe((change) => this.observers.storeChange(change));
  }

  static async start(config: Config, opts: StartOptions = {}): Promise<StrandNode> {
    const env = opts.env ?? process.env;
    const log = opts.logger ?? createLogger(config.log_level, 'strand', config.log_format);
    // Refuse a forbidden RPC address before touching keys, store or chain.
    if (config.services.includes('rpc'))
      assertBindAllowed(config.rpc.listening_addr, !!config.rpc.auth_public_key);
    const identity = identityFromSecret(loadOrCreateNodeKey(path.join(config.fiberDir, 'sk')));
    // CKB's hash in WebAssembly: compiled by now in practice; a failure leaves the JS one.
    const hashFallback = await hashReady;
    // The wallet funds channels (fiber) and pays on chain (ckb): either service needs it.
    const walletKey =
      config.services.includes('ckb') || config.services.includes('fiber')
        ? loadWalletKey(path.join(config.ckbDir, 'key'), { password: env[PASSWORD_ENV] })
        : undefined;
    const file = path.join(config.fiberDir, 'store', 'strand.db');
    const db = await openStore(
      { url: config.store.url, timeoutMs: config.store.timeout_ms, file, synchronous: 'NORMAL' },
      NODE_SCHEMAS,
      config.store.url ? leaderLease(config, identity.pubkeyHex, log, opts.onLeaseLost) : undefined,
    );
    // SQLite: one transaction per turn of the event loop, committed before each WAL flush.
    const turns = isSqlite(db) ? new TurnTransactionDb(db, storeFailed(log, 'store commit')) : undefined;
    const node = new StrandNode(config, identity, walletKey, turns ?? db, log);
    // Before each flush of the gate: the TLC batches scheduled for the end of this turn, then the
    // channel states staged in it, then the turn's transaction: their messages leave with it.
    const commitTurnFirst = (commitTurn: () => void) => () => {
      node.channels?.runScheduledTlcBatches();
      const ran = node.channels?.commitStaged() ?? false;
      commitTurn();
      return ran;
    };
    if (turns)
      node.durability = new WalDurability(turns.sqlite, {
        walFile: `${file}-wal`,
        onFatal: storeFailed(log, 'store flush (fdatasync)'),
        onPlacement: (inline, medianMs) =>
          log.info(
            { flush_ms: +medianMs.toFixed(2), on: inline ? 'event loop' : 'thread pool' },
            inline
              ? 'store flushes are fast again: made inline'
              : 'store flushes are slow: moved to the thread pool',
          ),
        beforeFlush: commitTurnFirst(() => turns.commitTurn()),
        onFlushed: (ms) => node.observers.metrics?.storeFlushed(ms),
        afterFirst: () => node.peers?.flushReleased(),
      });
    if (db instanceof PgDb) {
      // Postgres: one transaction per turn too; output waits for its COMMIT.
      db.enableTurns(storeFailed(log, 'store commit'));
      node.durability = new WalDurability(db, {
        onFatal: storeFailed(log, 'store commit'),
        beforeFlush: commitTurnFirst(() => db.commitTurn()),
        afterFirst: () => node.peers?.flushReleased(),
      });
    }
    if (turns)
      node.checkpointer = startCheckpointer(turns.sqlite, file, {
        onUnavailable: (reason) =>
          log.warn({ reason }, 'WAL checkpoints could not move to a worker: made on the node thread'),
      });
    const quotaFile = env[STORE_QUOTA_ENV];
    if (quotaFile && turns)
      node.stopQuota = watchPageQuota(
        turns.sqlite,
        quotaFile,
        (pages) => log.warn({ ...pages, file: quotaFile }, 'dev store page quota applied'),
        () => turns.commitTurn(),
      );
    try {
      checkNodeOwnership(db, identity.pubkeyHex);
      if (config.services.includes('ckb')) await node.connectChain();
      if (config.services.includes('fiber')) await node.startPeers();
      if (node.peers) node.startGraph();
      if (node.peers && node.chain && node.wallet) await node.startChannels();
      if (node.channels) node.startPayments();
      if (node.chain) await node.startWatchtower();
      if (config.services.includes('cch'))
        node.cch = startCch({
          config,
          db,
          log,
          changes: node.changes,
          durable: () => node.durability.durable(),
          localMethods: node.payments ? node.allMethods() : undefined,
        });
      if (config.services.includes('rpc')) await node.startRpc();
      await node.observers.start({
        peers: node.peers,
        channels: node.channels,
        // Postgres: each turn's COMMIT is the server's WAL flush.
        storeSyncs: () => (db instanceof PgDb ? db.turnCommits : node.durability.syncs),
      });
    } catch (e) {
      await node.stop();
      throw e;
    }
    const { curve, fallbackReason } = curveBackend();
    if (fallbackReason)
      log.warn({ curve: curve.name, reason: fallbackReason }, 'curve arithmetic in pure JS (slower)');
    if (hashFallback) log.warn({ reason: hashFallback }, "CKB's hash in pure JS (slower)");
    log.info(
      { pubkey: identity.pubkeyHex, peer_id: identity.peerId, version: VERSION, curve: curve.name },
      'node started',
    );
    return node;
  }

  get rpcUrl(): string | undefined {
    return this.rpc?.url;
  }

  private async startChannels(): Promise<void> {
    const { fiber } = this.config;
    let scripts: Awaited<ReturnType<typeof loadChannelScripts>>;
    try {
      scripts = await loadChannelScripts(this.chain as ChainClient);
    } catch (e) {
      this.log.warn(
        { err: (e as Error).message },
        'the chain does not name the channel scripts: channels disabled',
      );
      return;
    }
    const lock = this.defaultFundingLockScript();
    const rules = nodeRules(this.config);
    this.nonces = new NoncePool({
      worker: startCurveWorker(),
      onUnavailable: (reason) => this.log.info({ reason }, 'channel nonces are made when needed, not ahead'),
    });
    this.channels = new ChannelService({
      nonces: this.nonces,
      db: this.db,
      requestFlush: () => this.durability.requestFlush(),
      durable: () => this.durability.durable(),
      peers: this.peers as PeerManager,
      wallet: this.wallet as Wallet,
      chain: this.chain as ChainClient,
      chainHash: this.chainHash(),
      scripts,
      nodeSecret: this.identity.secretKey,
      walletSecretKey: this.walletKey,
      announcements: this.graph
        ? channelAnnouncementHooks(this.graph, (tx) => {
            const ch = this.channels?.store.list().find((c) => c.fundingTxHash === tx);
            return ch
              ? {
                  tlcExpiryDelta: ch.tlcExpiryDelta,
                  tlcMinValue: ch.tlcMinValue,
                  feeRate: ch.tlcFeeProportionalMillionths,
                  enabled: ch.enabled,
                }
              : undefined;
          })
        : undefined,
      defaultShutdownScript: { codeHash: lock.code_hash, hashType: lock.hash_type, args: lock.args },
      autoAccept: {
        minCkbFundingAmount: fiber.open_channel_auto_accept_min_ckb_funding_amount,
        ckbFundingAmount: fiber.auto_accept_channel_ckb_funding_amount,
      },
      udtWhitelist: this.udtWhitelist,
      tlc: {
        expiryDelta: fiber.tlc_expiry_delta,
        minValue: fiber.tlc_min_value,
        feeProportionalMillionths: fiber.tlc_fee_proportional_millionths,
      },
      expiry: rules.expiry,
      minTlcExpiryDelta: rules.minTlcExpiryDelta,
      pollMs: rules.chainPollMs,
      peerResponseTimeoutMs: rules.peerResponseTimeoutMs,
      pipelinedUpdates: fiber.pipelined_updates,
      onPolicyUpdated: this.graph ? (ch) => broadcastOwnPolicy(this.graph as GraphService, ch) : undefined,
      onChange: this.observers.channelHook(
        this.graph &&
          channelClosingHook(this.graph, (err) =>
            this.log.warn({ err: err.message }, 'disabling a closed channel in the graph failed'),
          ),
      ),
      externalFundingTimeoutSeconds: rules.externalFundingTimeoutSeconds,
      fundingTimeoutSeconds: rules.fundingTimeoutSeconds,
      logger: this.log,
    });
    this.observers.watchChannels(this.channels);
    this.channels.start();
  }

  /**
   * The built-in watchtower (our channels and those fed over RPC, unless
   * `fiber.disable_built_in_watchtower`) and the feed of a standalone one, when configured.
   */
  private async startWatchtower(): Promise<void> {
    const { fiber } = this.config;
    try {
      if (this.wallet && !fiber.disable_built_in_watchtower)
        this.watchtower = await startNodeWatchtower({
          db: this.db,
          chain: this.chain as ChainClient,
          wallet: this.wallet,
          intervalMs: nodeRules(this.config).watchtowerCheckMs,
          udtWhitelist: this.udtWhitelist,
          onPreimage: (hash, preimage) => this.preimageLearned(hash, preimage),
          preimageFor: (channelId, tlc) => this.paymentRelay?.preimageFor(channelId, tlc),
          logger: this.log,
        });
      if (fiber.standalone_watchtower_rpc_url)
        this.watchtowerFeed = await startWatchtowerFeed({
          db: this.db,
          chain: this.chain as ChainClient,
          client: createRpcClient(fiber.standalone_watchtower_rpc_url, fiber.standalone_watchtower_token),
          // The feed has no "never": at 0 it pushes every second.
          intervalMs: nodeRules(this.config).watchtowerCheckMs ?? 1000,
          logger: this.log,
        });
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'watchtower not started');
    }
  }

  /**
   * A preimage the watchtower read on chain: kept with the node's preimages (should a fulfil
   * fail, the TLC check fulfils again, and the watchtower claims on chain if the channel closes),
   * our outgoing TLCs with its hash end fulfilled (`preimageLearned`), then every TLC received
   * with it is fulfilled off chain.
   */
  private preimageLearned(hash: string, preimage: string): void {
    this.invoices.putPreimage(hash, preimage);
    const links = this.paymentRelay?.preimageLearned(hash, hexToBytes(preimage)) ?? Promise.resolve();
    void links
      .catch((e) => this.log.warn({ err: (e as Error).message }, 'a learned preimage not delivered'))
      .then(() => this.channels && fulfilReceivedTlcs(this.channels, hash, preimage, this.log));
  }

  /** `build_router`: a route through given hops over the graph (with our channels in it). */
  private routeBuilder() {
    const graph = this.graph;
    if (!graph) return undefined;
    const builder: RouteBuilder = (r) => {
      if (this.channels) syncOwnChannels(this.channels, graph);
      return graph.buildRoute(r);
    };
    return builder;
  }

  /** Payment sessions and the relay of the channels' TLCs (with channels). */
  private startPayments(): void {
    const wired = wirePayments({
      db: this.db,
      nodeSecretKey: this.identity.secretKey,
      nodePubkey: this.identity.pubkeyHex,
      channels: this.channels!,
      graph: this.graph,
      invoices: this.invoices,
      changes: this.changes,
      minTlcExpiryDelta: nodeRules(this.config).minTlcExpiryDelta,
      onFailing: (channelId, tlcId, code) => this.observers.events.failing(channelId, tlcId, code),
      // After the flush that lets this turn's output out, then one turn more: the peel runs
      // once the answer to the peer has been written.
      afterOutput: (fn) => this.release(() => setImmediate(fn)),
      onPeel: (made) => this.observers.metrics?.onionPeeled(made),
      log: this.log,
    });
    this.payments = wired.payments;
    this.paymentRelay = wired.relay;
    this.stopPayments = wired.stop;
  }

  /** Gossip over /p2p/43 and the network graph; announces this node unless turned off. */
  private startGraph(): void {
    const { fiber } = this.config;
    this.graph = createGraphService({
      db: this.db,
      identity: this.identity,
      chainHash: Buffer.from(this.chainHash().slice(2), 'hex'),
      peers: this.peers,
      funding: this.chain ? createChainFundingChecker(this.chain) : undefined,
      announcePrivateAddr: fiber.announce_private_addr,
      logger: this.log,
    });
    this.graph.start();
    if (fiber.auto_announce_node) {
      this.graph.startAnnouncing(
        () => ({
          nodeName: fiber.announced_node_name ?? '',
          addresses: [
            ...fiber.announced_addrs,
            ...(fiber.announce_listening_addr ? this.listeningAddresses() : []),
          ],
          features: featureBytes(NODE_FEATURES),
          version: VERSION,
          autoAcceptMinCkbFundingAmount: fiber.open_channel_auto_accept_min_ckb_funding_amount,
          udtCfgInfos: udtCfgInfosFromWhitelist(this.udtWhitelist.entries),
        }),
        nodeRules(this.config).announceNodeIntervalMs,
      );
    }
  }

  private async startPeers(): Promise<void> {
    const { fiber } = this.config;
    this.peers = createPeerManager({
      identity: this.identity,
      listenAddr: fiber.listening_addr,
      chainHash: this.chainHash(),
      db: this.db,
      bootnodes: fiber.bootnode_addrs,
      limits: { maxInbound: fiber.max_inbound_peers },
      features: initFeatures(fiber.pipelined_updates),
      onGossipSent: this.observers.onGossipSent,
      onMessageSent: this.observers.onPeerMessageSent,
      logger: this.log,
      release: this.releasePeerOutput,
    });
    this.observers.watchPeers(this.peers);
    await this.peers.start();
  }

  /**
   * Connects to the CKB chain (`ckb.rpc_url`) and learns its genesis hash, which peers must
   * share. Waits for an unreachable chain with backoff, one log line per attempt, then gives up
   * with an error naming the URL: a node must not run on a chain it cannot see.
   */
  private async connectChain(): Promise<void> {
    const { ckb } = this.config;
    this.chain = createChainClient({
      rpcUrl: ckb.rpc_url,
      logger: this.log,
      channelScripts: channelScriptsSource(this.config.network, readScriptsConfig(this.config.fiber.scripts)),
      beforeSend: () => this.durability.durable(),
    });
    const deadline = Date.now() + CHAIN_STARTUP_TIMEOUT_MS;
    for (let delay = 500; ; delay = Math.min(delay * 2, 5000)) {
      try {
        this.knownChainHash = await this.chain.chainHash();
        break;
      } catch (e) {
        if (Date.now() + delay > deadline) {
          throw new Error(`cannot reach the CKB chain at ${ckb.rpc_url}: ${(e as Error).message}`);
        }
        this.log.warn({ rpc_url: ckb.rpc_url, err: (e as Error).message }, 'chain unreachable, retrying');
        await new Promise((r) => setTimeout(r, delay));
      }
    }
    const expected = NETWORKS[this.config.network].chainHash;
    if (expected && expected !== this.knownChainHash) {
      throw new Error(
        `the network is ${this.config.network} but the chain at ${ckb.rpc_url} has genesis ${this.knownChainHash}`,
      );
    }
    if (this.walletKey) {
      this.wallet = createWallet({
        client: this.chain,
        secretKey: this.walletKey,
        addressPrefix: NETWORKS[this.config.network].addressPrefix,
        logger: this.log,
      });
    }
    this.udtWhitelist = await resolveUdtWhitelist(this.chain, this.udtWhitelist, (name, err) =>
      this.log.warn(
        { udt: name, err: err.message },
        'a UDT cell dep is not on the chain: its channels lack it',
      ),
    );
    this.stopChainProbe = startChainProbe(this.chain, nodeRules(this.config).chainPollMs);
    this.log.info({ rpc_url: ckb.rpc_url, chain_hash: this.knownChainHash }, 'connected to chain');
  }

  /** The genesis hash of the chain: from the chain itself when connected. */
  chainHash(): string {
    return this.knownChainHash ?? NETWORKS[this.config.network].chainHash ?? '0x' + '00'.repeat(32);
  }

  private async startRpc(): Promise<void> {
    const { rpc } = this.config;
    const auth = rpc.auth_public_key
      ? await createAuthorizer(rpc.auth_public_key, rpc.auth_revoked_ids)
      : OPEN_ACCESS;
    const enabled = new Set(rpc.enabled_modules);
    const methods = applyCompat(
      this.allMethods().filter((m) => enabled.has(m.module)),
      rpc.compat,
    );
    // Served whatever the modules: it describes the ones that are.
    methods.push(discoverMethod(() => methods, { version: VERSION, compat: rpc.compat }));
    this.rpc = await startRpcServer({
      listeningAddr: rpc.listening_addr,
      methods,
      auth,
      corsEnabled: rpc.cors_enabled,
      corsAllowedOrigins: rpc.cors_allowed_origins,
      maxBodySize: rpc.max_request_body_size,
      dashboard: rpc.dashboard,
      onAnswered: this.observers.onRpcAnswered,
      logger: this.log,
      release: this.release,
    });
  }

  /** Every method this build implements, of every module; the server keeps the enabled ones. */
  private allMethods(): MethodSpec[] {
    return [
      ...infoMethods(this.infoSource()),
      ...invoiceMethods(this.invoices, {
        attrStyle: this.config.rpc.compat === 'fnn-0.8' ? 'v08' : 'seed',
        knownUdt: (s) =>
          this.udtWhitelist.match({ codeHash: s.code_hash, hashType: s.hash_type, args: s.args }) !==
          undefined,
      }),
      ...(this.payments ? paymentMethods(this.payments, this.routeBuilder()) : []),
      ...(this.peers ? peerMethods(this.peers) : []),
      ...(this.graph ? graphMethods(this.graph) : []),
      ...(this.channels && this.peers ? channelMethods(this.channels, this.peers) : []),
      ...(this.channels ? channelExternalFundingMethods(this.channels) : []),
      ...(this.channels ? devMethods(this.channels) : []),
      ...(this.chain ? externalFundingMethods(this.chain) : []),
      ...pubsubMethods(this.changes),
      ...(this.cch ? cchMethods(this.cch) : []),
      ...watchtowerMethods(new WatchtowerStore(this.db)),
      ...adminMethods({ backup: (dest) => this.backup(dest) }),
      ...profMethods(path.join(this.config.baseDir, 'prof')),
    ];
  }

  /**
   * Online backup of the store and key files (admin module). Without a path, a new directory
   * under `<base dir>/backups/`.
   */
  backup(dest: string | undefined): Promise<BackupResult> {
    const { baseDir, fiberDir, ckbDir } = this.config;
    const target = dest ?? path.join(baseDir, 'backups', new Date().toISOString().replace(/[:.]/g, '-'));
    return backupNode(target, {
      db: this.db,
      storePath: path.join('fiber', 'store', 'strand.db'),
      files: [
        { from: path.join(fiberDir, 'sk'), to: path.join('fiber', 'sk') },
        { from: path.join(ckbDir, 'key'), to: path.join('ckb', 'key') },
      ],
      annotate: (copy) => ({ channels: checkpointBackupStore(copy) }),
    });
  }

  /** The node's invoices (signed with the node key, in the node's store). */
  get invoices(): InvoiceService {
    this.invoiceService ??= createInvoiceService({
      db: this.db,
      nodeSecretKey: this.identity.secretKey,
      currency: currencyOf(this.config.fiber.chain),
      minFinalExpiryDelta: nodeRules(this.config).minTlcExpiryDelta,
      onChange: (change) => this.changes.publish(change),
      // Hold invoices: the relay fulfils (or fails) the TLCs it held for them.
      // A held TLC in a channel closed meanwhile refuses the fulfil (its preimage is claimed on
      // chain): logged, never an unhandled rejection that stops the node.
      onSettle: (hash) =>
        void this.paymentRelay
          ?.settleHeld(bytesToHex(hash))
          .catch((e) => this.log.warn({ err: (e as Error).message }, 'settling held TLCs failed')),
      onCancel: (hash) =>
        void this.paymentRelay
          ?.cancelHeld(bytesToHex(hash))
          .catch((e) => this.log.warn({ err: (e as Error).message }, 'cancelling held TLCs failed')),
    });
    return this.invoiceService;
  }

  private infoSource() {
    const { fiber } = this.config;
    return {
      version: VERSION,
      commitHash: COMMIT_HASH,
      pubkey: this.identity.pubkeyHex,
      features: () => NODE_FEATURES,
      nodeName: fiber.announced_node_name ?? null,
      addresses: () => this.listeningAddresses(),
      chainHash: () => this.chainHash(),
      openChannelAutoAcceptMinCkbFundingAmount: fiber.open_channel_auto_accept_min_ckb_funding_amount,
      autoAcceptChannelCkbFundingAmount: fiber.auto_accept_channel_ckb_funding_amount,
      defaultFundingLockScript: () => this.defaultFundingLockScript(),
      tlcExpiryDelta: fiber.tlc_expiry_delta,
      tlcMinValue: fiber.tlc_min_value,
      tlcFeeProportionalMillionths: fiber.tlc_fee_proportional_millionths,
      channelCount: () => this.channels?.counts().channelCount ?? 0,
      pendingChannelCount: () => this.channels?.counts().pendingChannelCount ?? 0,
      peersCount: () => this.peers?.peersCount ?? 0,
      ckbRpcStatus: () => (this.chain ? describeChainStatus(this.chain.status()) : null),
      udtCfgInfos: this.config.ckb.udt_whitelist.map((u) => ({
        name: u.name,
        script: u.script,
        auto_accept_amount: u.auto_accept_amount ?? null,
        cell_deps: u.cell_deps,
      })),
    };
  }

  private listeningAddresses(): string[] {
    // The TCP form (the seed's shape); WebSocket is served on the same port at `…/ws/p2p/<id>`.
    if (this.peers) return this.peers.listeningAddrs().filter((a) => !a.includes('/ws/'));
    return [`${this.config.fiber.listening_addr}/p2p/${this.identity.peerId}`];
  }

  /**
   * The wallet's secp256k1-blake160 lock: where funding comes from and settlement returns.
   * Computed once: deriving the public key is an EC multiplication (~1 ms), too dear per call.
   */
  defaultFundingLockScript(): ScriptJson {
    if (!this.fundingLock) {
      const args = this.walletKey ? bytesToHex(blake160(publicKeyOf(this.walletKey))) : '0x';
      this.fundingLock = { code_hash: SIGHASH_ALL_TYPE_HASH, hash_type: 'type', args };
    }
    return this.fundingLock;
  }

  /**
   * Stops the services in the reverse order of their start, then closes the store. A service
   * still busy at `deadlineMs` (a chain call that never answers, a peer that does not read) is
   * left behind: the store closes anyway and the result is false, for the caller to exit.
   */
  async stop(deadlineMs = STOP_DEADLINE_MS): Promise<boolean> {
    if (this.stopped) return true;
    this.stopped = true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), deadlineMs);
    });
    const orderly = this.stopServices().then(
      () => true,
      (err) => {
        this.log.error({ err: (err as Error).message }, 'stopping a service failed');
        return true;
      },
    );
    const clean = await Promise.race([orderly, late]);
    clearTimeout(timer);
    if (!clean)
      this.log.warn({ deadline_ms: deadlineMs }, 'services did not stop in time: closing the store');
    await this.checkpointer?.stop();
    this.closeStore();
    this.log.info({}, 'node stopped');
    this.log.flush();
    return clean;
  }

  /** Closes the store now (a second signal, a missed deadline); committed state stays. */
  closeStore(): void {
    this.stopQuota?.();
    // Already stopped by `stop`; after a second signal its thread ends with the process.
    void this.checkpointer?.stop();
    this.durability.close();
    if (this.db.open) this.db.close();
  }

  /** Output gate for peers and RPC: runs `fn` once the store is durable. */
  private readonly release = (fn: () => void): void => this.durability.whenDurable(fn);
  /** The same for peer messages: they leave before the RPC output the same flush releases. */
  private readonly releasePeerOutput = (fn: () => void): void => this.durability.whenDurable(fn, true);

  private async stopServices(): Promise<void> {
    await this.observers.stop();
    await this.rpc?.close();
    this.stopChainProbe?.();
    this.stopPayments?.();
    await this.watchtower?.stop();
    await this.watchtowerFeed?.stop();
    await this.channels?.stop();
    this.nonces?.stop();
    await this.graph?.stop();
    await this.peers?.stop();
  }
}
