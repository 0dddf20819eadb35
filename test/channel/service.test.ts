/**
 * The channel service with a real SQLite store and a scripted peer: hostile and replayed wire
 * messages change nothing, every message leaves only after the state it depends on is committed,
 * abandon and restart behave.
 */

import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ccc } from '@ckb-ccc/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { deriveChannelKeys, tempChannelId } from '../../src/channel/keys.ts';
import { ChannelService } from '../../src/channel/service.ts';
import type { ChannelServiceOptions, PeerLink } from '../../src/channel/service-options.ts';
import { ChannelStore, channelSchema } from '../../src/channel/store.ts';
import { CKB } from '../../src/channel/tx.ts';
import { type ChannelMessage, fromFiberMessage, toFiberMessage } from '../../src/channel/wire.ts';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import { type FiberMessage, type FiberMessageKind, INIT_FEATURES } from '../../src/p2p/fiber-message.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';

const CHAIN = `0x${'77'.repeat(32)}`;
const PEER = `02${'aa'.repeat(32)}`;
const OTHER = `03${'bb'.repeat(32)}`;
const lock = { codeHash: `0x${'9b'.repeat(32)}`, hashType: 'type' as const, args: `0x${'01'.repeat(20)}` };
const scriptInfo = { codeHash: `0x${'42'.repeat(32)}`, hashType: 'data2' as const, cellDeps: [] };

class FakePeers extends EventEmitter implements PeerLink {
  handlers = new Map<FiberMessageKind, (pk: string, m: FiberMessage) => void | Promise<void>>();
  sent: { pk: string; msg: ChannelMessage; storedState?: string }[] = [];
  store?: Pick<ChannelStore, 'get'>;
  onMessage(kind: FiberMessageKind, h: (pk: string, m: FiberMessage) => void | Promise<void>) {
    this.handlers.set(kind, h);
    return () => this.handlers.delete(kind);
  }
  send(pk: string, m: FiberMessage) {
    const msg = fromFiberMessage(m) as ChannelMessage;
    // What the store holds at the moment the message leaves.
    const id = bytesToHex(msg.value.channelId);
    this.sent.push({ pk, msg, storedState: this.store?.get(id)?.state });
  }
  isConnected(pk: string) {
    return pk === PEER || pk === OTHER;
  }
  /** Peers whose session is open but whose Init has not come yet. */
  noInitYet = new Set<string>();
  /** Another Strand node: the seed's channel rules. */
  peerInit(pk: string) {
    return this.isConnected(pk) && !this.noInitYet.has(pk) ? { features: INIT_FEATURES } : undefined;
  }
  dropped: string[] = [];
  drop(pk: string) {
    this.dropped.push(pk);
  }
  deliver(pk: string, msg: ChannelMessage) {
    return this.handlers.get(msg.type)?.(pk, toFiberMessage(msg));
  }
}

let dir: string;
let db: Db;
let peers: FakePeers;
let svc: ChannelService;

function service(minAuto = 100n * CKB, extra: Partial<ChannelServiceOptions> = {}) {
  const s = new ChannelService({
    db,
    peers,
    wallet: {} as never,
    chain: {} as never,
    chainHash: CHAIN,
    scripts: { fundingLock: scriptInfo, commitmentLock: scriptInfo },
    nodeSecret: new Uint8Array(32).fill(5),
    defaultShutdownScript: lock,
    autoAccept: { minCkbFundingAmount: minAuto, ckbFundingAmount: 250n * CKB },
    tlc: { expiryDelta: 14_400_000n, minValue: 0n, feeProportionalMillionths: 1000n },
    ...extra,
  });
  s.start();
  peers.store = s.store.durable;
  return s;
}

function open(over: Record<string, unknown> = {}): ChannelMessage {
  const k = deriveChannelKeys(new Uint8Array(32).fill(9));
  return {
    type: 'OpenChannel',
    value: {
      chainHash: ccc.bytesFrom(CHAIN),
      channelId: tempChannelId(k.tlcBasepoint),
      fundingUdtTypeScript: null,
      fundingAmount: 438n * CKB,
      shutdownScript: ccc.Script.from(lock),
      reservedCkbAmount: 62n * CKB,
      fundingFeeRate: 1000n,
      commitmentFeeRate: 1000n,
      maxTlcValueInFlight: 1n << 64n,
      maxTlcNumberInFlight: 125n,
      commitmentDelayEpoch: 0x0000010000000001n,
      fundingPubkey: k.fundingPubkey,
      tlcBasepoint: k.tlcBasepoint,
      firstPerCommitmentPoint: k.fundingPubkey,
      secondPerCommitmentPoint: k.tlcBasepoint,
      channelAnnouncementNonce: null,
      nextCommitmentNonce: new Uint8Array(66).fill(2),
      nextRevocationNonce: new Uint8Array(66).fill(3),
      channelFlags: 0,
      ...over,
    },
  } as ChannelMessage;
}

const settle = () => new Promise((r) => setTimeout(r, 50));

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-chsvc-'));
  db = openDatabase(path.join(dir, 'strand.db'), [channelSchema]);
  peers = new FakePeers();
});
afterEach(async () => {
  await svc?.stop();
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('channel service', () => {
  it('refuses an OpenChannel for another chain with a TxAbort and stores nothing', async () => {
    svc = service();
    await peers.deliver(PEER, open({ chainHash: new Uint8Array(32) }));
    await settle();
    expect(svc.list()).toEqual([]);
    expect(peers.sent.map((s) => s.msg.type)).toEqual(['TxAbort']);
    const abort = peers.sent[0]!.msg as Extract<ChannelMessage, { type: 'TxAbort' }>;
    expect(new TextDecoder().decode(abort.value.message)).toBe('chain hash mismatch');
  });

  it('auto-accepts: AcceptChannel leaves only after the accepted state is committed', async () => {
    svc = service();
    await peers.deliver(PEER, open());
    await settle();
    const [ch] = svc.list();
    expect(ch!.state).toBe('COLLABORATING_FUNDING_TX');
    expect(ch!.localBalance).toBe(188n * CKB);
    expect(peers.sent.map((s) => [s.msg.type, s.storedState])).toEqual([
      ['AcceptChannel', 'COLLABORATING_FUNDING_TX'],
    ]);
  });

  it("auto-accepts by the opener's funding amount alone, as fnn: with the reserve it would reach the minimum, without it not", async () => {
    svc = service(450n * CKB);
    await peers.deliver(PEER, open()); // 438 CKB funding + 62 CKB reserve
    await settle();
    expect(svc.list().map((c) => c.state)).toEqual(['NEGOTIATING_FUNDING']);
    expect(peers.sent).toEqual([]);
    await svc.stop();
    svc = service(438n * CKB);
    await peers.deliver(OTHER, open({ channelId: new Uint8Array(32).fill(7) }));
    await settle();
    expect(svc.list().find((c) => c.peer === OTHER)?.state).toBe('COLLABORATING_FUNDING_TX');
  });

  it('aborts an opening still unsigned after funding_timeout_seconds, telling the peer', async () => {
    svc = service(10_000n * CKB, { fundingTimeoutSeconds: 1, pollMs: 20 }); // no auto-accept
    await peers.deliver(PEER, open());
    await settle();
    expect(svc.list().map((c) => c.state)).toEqual(['NEGOTIATING_FUNDING']);
    // The closed state is seen as soon as it is staged; the TxAbort leaves once it is durable.
    const aborted = () => peers.sent.some((x) => x.msg.type === 'TxAbort');
    const deadline = Date.now() + 10_000;
    while ((svc.list()[0]?.state !== 'CLOSED' || !aborted()) && Date.now() < deadline) await settle();
    const [ch] = svc.list();
    expect([ch!.state, ch!.flags]).toEqual(['CLOSED', ['FUNDING_ABORTED']]);
    expect(ch!.failureDetail).toBe('funding timed out: the channel was not ready 1 s after it was created');
    const abort = peers.sent.find((x) => x.msg.type === 'TxAbort')!.msg as Extract<
      ChannelMessage,
      { type: 'TxAbort' }
    >;
    expect(new TextDecoder().decode(abort.value.message)).toBe(ch!.failureDetail);
  });

  it('open_channel on a session whose Init has not come yet waits for it: Strand rules, and the Init does not abort the opening', async () => {
    svc = service(100n * CKB, {
      wallet: { fund: async (tx: ccc.Transaction) => tx, release: () => {} } as never,
    });
    peers.noInitYet.add(PEER);
    const opened = svc.openChannel({ pubkey: PEER, fundingAmount: 500n * CKB });
    await settle();
    expect(svc.list()).toEqual([]);
    // The Init arrives: the peer manager counts it as the session's connection.
    peers.noInitYet.delete(PEER);
    peers.emit('connected', { pubkey: PEER });
    const { temporaryChannelId } = await opened;
    await settle();
    const ch = svc.get(temporaryChannelId);
    expect([ch?.state, ch?.rules, ch?.local.reserve]).toEqual(['NEGOTIATING_FUNDING', undefined, 62n * CKB]);
    expect(peers.sent.map((x) => x.msg.type)).toEqual(['OpenChannel']);
  });

  it("open_channel refuses a peer whose Init does not come, with fnn's text", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      svc = service();
      peers.noInitYet.add(PEER);
      const opened = svc.openChannel({ pubkey: PEER, fundingAmount: 500n * CKB });
      const check = expect(opened).rejects.toThrow(
        /feature not found, waiting for peer to send Init message/,
      );
      await vi.advanceTimersByTimeAsync(5_000);
      await check;
      expect(svc.list()).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('drops an unsigned opening when the peer reconnects (its OpenChannel may be lost), telling the peer; a signed-for channel is reestablished', async () => {
    svc = service(10_000n * CKB); // no auto-accept: the opening waits in NEGOTIATING_FUNDING
    await peers.deliver(PEER, open());
    await settle();
    expect(svc.list().map((c) => c.state)).toEqual(['NEGOTIATING_FUNDING']);
    peers.emit('connected', { pubkey: PEER });
    await settle();
    const [ch] = svc.list();
    expect([ch!.state, ch!.flags, ch!.failureDetail]).toEqual([
      'CLOSED',
      ['FUNDING_ABORTED'],
      'the peer reconnected before the funding was signed',
    ]);
    expect(peers.sent.map((s) => [s.msg.type, s.storedState])).toEqual([['TxAbort', 'CLOSED']]);
    // A reconnection of another peer leaves this one alone; a closed channel sends nothing.
    peers.emit('connected', { pubkey: OTHER });
    peers.emit('connected', { pubkey: PEER });
    await settle();
    expect(peers.sent).toHaveLength(1);
  });

  it('group commit: states stepped in one turn share one transaction, and their messages leave after it', async () => {
    svc = service();
    const saveAll = vi.spyOn(ChannelStore.prototype, 'saveAll');
    try {
      // Two openings from two peers, delivered in the same turn: both auto-accepted.
      void peers.deliver(PEER, open());
      void peers.deliver(OTHER, open({ channelId: new Uint8Array(32).fill(7) }));
      await settle();
      expect(saveAll).toHaveBeenCalledTimes(1);
      expect(saveAll.mock.calls[0]![0].map((c) => c.peer).sort()).toEqual([PEER, OTHER].sort());
      expect(peers.sent.map((x) => [x.msg.type, x.storedState])).toEqual([
        ['AcceptChannel', 'COLLABORATING_FUNDING_TX'],
        ['AcceptChannel', 'COLLABORATING_FUNDING_TX'],
      ]);
    } finally {
      saveAll.mockRestore();
    }
  });

  it('a failed group commit sends nothing, keeps nothing and drops the peers of its states until they reconnect', async () => {
    svc = service();
    const full = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    const saveAll = vi.spyOn(ChannelStore.prototype, 'saveAll').mockImplementationOnce(() => {
      throw full;
    });
    try {
      void peers.deliver(PEER, open());
      await settle();
      expect(peers.sent).toEqual([]);
      expect(svc.list()).toEqual([]);
      expect(peers.dropped).toEqual([PEER]);
      // The peer's reconnection and its OpenChannel again: now it is stored and answered.
      peers.emit('connected', { pubkey: PEER });
      void peers.deliver(PEER, open());
      await settle();
      expect(peers.sent.map((x) => [x.msg.type, x.storedState])).toEqual([
        ['AcceptChannel', 'COLLABORATING_FUNDING_TX'],
      ]);
    } finally {
      saveAll.mockRestore();
    }
  });

  it('an opening of ours dropped before its funding went out gives the wallet its cells back', async () => {
    const input = ccc.CellInput.from({
      previousOutput: { txHash: `0x${'ab'.repeat(32)}`, index: 0 },
      since: 0n,
    });
    const released: ccc.Transaction[] = [];
    const wallet = {
      fund: async (tx: ccc.Transaction) => {
        const t = tx.clone();
        t.inputs.push(input);
        return t;
      },
      release: (tx: ccc.Transaction) => released.push(tx),
    };
    svc = service(100n * CKB, { wallet: wallet as never });
    const { temporaryChannelId } = await svc.openChannel({ pubkey: PEER, fundingAmount: 500n * CKB });
    const k = deriveChannelKeys(new Uint8Array(32).fill(9));
    await peers.deliver(PEER, {
      type: 'AcceptChannel',
      value: {
        channelId: hexToBytes(temporaryChannelId),
        fundingAmount: 0n,
        shutdownScript: ccc.Script.from(lock),
        reservedCkbAmount: 62n * CKB,
        maxTlcValueInFlight: 1n << 64n,
        maxTlcNumberInFlight: 125n,
        fundingPubkey: k.fundingPubkey,
        tlcBasepoint: k.tlcBasepoint,
        firstPerCommitmentPoint: k.fundingPubkey,
        secondPerCommitmentPoint: k.tlcBasepoint,
        channelAnnouncementNonce: null,
        nextCommitmentNonce: new Uint8Array(66).fill(2),
        nextRevocationNonce: new Uint8Array(66).fill(3),
      },
    });
    const deadline = Date.now() + 5000;
    while (!svc.list()[0]?.fundingTxHash && Date.now() < deadline) await settle();
    expect([svc.list()[0]?.state, svc.list()[0]?.failureDetail]).toEqual(['COLLABORATING_FUNDING_TX', null]);
    expect(released).toEqual([]);
    peers.emit('connected', { pubkey: PEER });
    await settle();
    expect(svc.list()[0]?.flags).toEqual(['FUNDING_ABORTED']);
    expect(released).toHaveLength(1);
    expect(released[0]!.inputs.map((i) => i.previousOutput.txHash)).toContain(input.previousOutput.txHash);
  });

  it('replays, strangers and garbage change nothing; manual accept and abandon work', async () => {
    svc = service(10_000n * CKB); // no auto-accept
    const m = open();
    await peers.deliver(PEER, m);
    await settle();
    const before = svc.list();
    expect(before[0]!.state).toBe('NEGOTIATING_FUNDING');
    // The same open again, a message of this channel from another peer, undecodable bytes.
    await peers.deliver(PEER, m);
    await peers.deliver(OTHER, {
      type: 'TxComplete',
      value: { channelId: m.value.channelId, nextCommitmentNonce: new Uint8Array(66) },
    });
    await peers.handlers.get('AcceptChannel')?.(PEER, {
      type: 'AcceptChannel',
      raw: new Uint8Array([1, 2, 3]),
    } as FiberMessage);
    await peers.handlers.get('TxUpdate')?.(PEER, {
      type: 'TxUpdate',
      raw: new Uint8Array(400).fill(0xff),
    } as FiberMessage);
    await settle();
    expect(svc.list()).toEqual(before);
    expect(peers.sent).toEqual([]);
    // Manual accept below the reserve is refused with the reference's text; abandon closes it.
    const temp = before[0]!.tempId;
    await expect(svc.acceptChannel({ temporaryChannelId: temp, fundingAmount: 10n * CKB })).rejects.toThrow(
      `Invalid parameter: The funding amount (${10n * CKB}) should be greater than or equal to ${98n * CKB}`,
    );
    await svc.abandonChannel(temp);
    const [closed] = svc.list();
    expect([closed!.state, closed!.flags]).toEqual(['CLOSED', ['ABANDONED']]);
    expect(peers.sent.map((s) => s.msg.type)).toEqual(['TxAbort']);
    await expect(svc.abandonChannel(temp)).rejects.toThrow(/is in state Closed, cannot be abandoned/);
    await expect(svc.acceptChannel({ temporaryChannelId: temp, fundingAmount: 100n * CKB })).rejects.toThrow(
      `Invalid parameter: No channel with temp id Hash256(${temp}) found`,
    );
  });

  it('takes the least tlc_expiry_delta from its options (2/3 of the node epoch)', async () => {
    const small = 'Invalid parameter: TLC expiry delta is too small';
    svc = service(10_000n * CKB, { minTlcExpiryDelta: 1333n }); // no auto-accept
    await expect(
      svc.openChannel({ pubkey: PEER, fundingAmount: 500n * CKB, tlcExpiryDelta: 1332n }),
    ).rejects.toThrow(`${small}, expect larger than 1333, got 1332`);
    await peers.deliver(PEER, open());
    await settle();
    const temp = svc.list()[0]!.tempId;
    await expect(
      svc.acceptChannel({ temporaryChannelId: temp, fundingAmount: 100n * CKB, tlcExpiryDelta: 1332n }),
    ).rejects.toThrow(`${small}, expect larger than 1333, got 1332`);
    // The default keeps fnn's release bound.
    const dflt = service(10_000n * CKB);
    await expect(
      dflt.openChannel({ pubkey: PEER, fundingAmount: 500n * CKB, tlcExpiryDelta: 1333n }),
    ).rejects.toThrow(`${small}, expect larger than 9600000, got 1333`);
    await dflt.stop();
  });

  it('keeps channels across a restart of the service', async () => {
    svc = service(10_000n * CKB);
    await peers.deliver(PEER, open());
    await settle();
    const before = svc.list();
    await svc.stop();
    svc = service(10_000n * CKB);
    expect(svc.list()).toEqual(before);
    expect(svc.counts()).toEqual({ channelCount: 0, pendingChannelCount: 1 });
  });
});
