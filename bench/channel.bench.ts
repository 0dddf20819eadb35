/**
 * Channel core throughput: two pure channel machines in one process (no chain, no sockets, no
 * store), a ready 500/250 CKB channel, then N TLC rounds (add + fulfil: 2 × (AddTlc/RemoveTlc,
 * CommitmentSigned, RevokeAndAck, CommitmentSigned, RevokeAndAck) with real MuSig2 signing and
 * verification), after up to 300 payments to warm V8 up. Prints rounds per second and the cost of
 * one serialised state.
 * With a batch size (second argument, default 1), each round carries that many updates: the
 * batches a loaded channel runs (~20–30 at 64 payments in flight), where per-update work counts
 * and per-round work is shared.
 * `BENCH_NONCES_AHEAD=1`: both machines take their nonce pairs from a `NoncePool` whose points a
 * worker thread makes (as a node does), and the loop lets the event loop turn between payments
 * so that its answers arrive.
 * Run: node --import tsx bench/channel.bench.ts [rounds] [batch]
 */
import { ccc } from '@ckb-ccc/core';
import { deriveChannelKeys, tempChannelId } from '../src/channel/keys.ts';
import { step } from '../src/channel/machine.ts';
import { madeAheadOr, NoncePool } from '../src/channel/nonce-pool.ts';
import { acceptChannel, openChannel, receiveOpen } from '../src/channel/open.ts';
import { scriptData } from '../src/channel/script-data.ts';
import { type Channel, serializeChannel } from '../src/channel/state.ts';
import type { Effect, Event, MachineEnv } from '../src/channel/step.ts';
import { CKB } from '../src/channel/tx.ts';
import type { ChannelMessage } from '../src/channel/wire.ts';
import { bytesToHex } from '../src/codec/hex.ts';
import { ckbHash, hashBackend, hashReady } from '../src/crypto/hash.ts';
import { startCurveWorker } from '../src/crypto/made-ahead.ts';

await hashReady;
const rounds = Number(process.argv[2] ?? 200);
const batch = Math.max(1, Number(process.argv[3] ?? 1));
const info = { codeHash: `0x${'42'.repeat(32)}`, hashType: 'data2' as const, cellDeps: [] };
const pool =
  process.env.BENCH_NONCES_AHEAD === '1' ? new NoncePool({ worker: startCurveWorker() }) : undefined;
const env: MachineEnv = {
  chainHash: `0x${'77'.repeat(32)}`,
  fundingLock: info,
  commitmentLock: info,
  now: () => 1_700_000_000_000,
  ...(pool ? { nonce: madeAheadOr(pool) } : {}),
};
/** With the pool, a turn of the event loop between payments lets the worker's answers in. */
const turn = () => (pool ? new Promise((r) => setImmediate(r)) : undefined);
const lock = scriptData({ codeHash: `0x${'9b'.repeat(32)}`, hashType: 'type', args: `0x${'01'.repeat(20)}` });

interface Side {
  ch?: Channel;
  inbox: ChannelMessage[];
}

function perform(me: Side, other: Side, effects: Effect[], events: Event[]) {
  for (const e of effects) {
    if (e.type === 'send') other.inbox.push(e.msg);
    else if (e.type === 'fund') {
      const tx = e.tx.clone();
      tx.inputs.push(
        ccc.CellInput.from({
          previousOutput: {
            txHash: ckbHash(new Uint8Array([tx.inputs.length, me === other ? 1 : 0])),
            index: 0,
          },
          since: 0n,
        }),
      );
      if (me.ch?.isAcceptor) tx.outputs[0]!.capacity += e.contribution;
      events.push({ type: 'funded', tx });
    } else if (e.type === 'signFunding') {
      // No chain here: placeholder witnesses stand in for the wallet's signatures.
      const tx = e.tx.clone();
      tx.witnesses = tx.inputs.map(() => '0x00');
      events.push({ type: 'fundingSigned', tx });
    }
  }
}

function run(a: Side, b: Side) {
  for (;;) {
    let moved = false;
    for (const [me, other] of [
      [a, b],
      [b, a],
    ] as const) {
      const msg = me.inbox.shift();
      if (!msg) continue;
      moved = true;
      feed(me, other, { type: 'peer', msg });
    }
    if (!moved) return;
  }
}

function feed(me: Side, other: Side, ev: Event) {
  const events = [ev];
  while (events.length) {
    const r = step(me.ch as Channel, events.shift() as Event, env);
    me.ch = r.ch;
    perform(me, other, r.effects, events);
  }
}

const A: Side = { inbox: [] };
const B: Side = { inbox: [] };
const seed = new Uint8Array(32).fill(1);
const o = openChannel(
  {
    peer: 'B',
    seed,
    tempId: bytesToHex(tempChannelId(deriveChannelKeys(seed).tlcBasepoint)),
    isPublic: false,
    fundingAmount: 438n * CKB,
    reserve: 62n * CKB,
    shutdownScript: lock,
    udt: null,
    fundingFeeRate: 1000n,
    commitmentFeeRate: 1000n,
    delayEpoch: 0x0000010000000001n,
    maxTlcValueInFlight: 1n << 100n,
    maxTlcNumberInFlight: 125n,
    tlcExpiryDelta: 14_400_000n,
    tlcMinValue: 0n,
    tlcFeeProportionalMillionths: 1000n,
  },
  env,
);
A.ch = o.ch;
const open = (o.effects[0] as Extract<Effect, { type: 'send' }>).msg as Extract<
  ChannelMessage,
  { type: 'OpenChannel' }
>;
B.ch = receiveOpen(
  open.value,
  { peer: 'A', seed: new Uint8Array(32).fill(2), shutdownScript: lock, reserve: 62n * CKB },
  env,
  {
    tlcExpiryDelta: 14_400_000n,
    tlcMinValue: 0n,
    tlcFeeProportionalMillionths: 1000n,
  },
);
const acc = acceptChannel(B.ch, { fundingAmount: 188n * CKB }, env);
B.ch = acc.ch;
perform(B, A, acc.effects, []);
run(A, B);
feed(A, B, { type: 'fundingConfirmed' });
feed(B, A, { type: 'fundingConfirmed' });
run(A, B);
if (A.ch?.state !== 'CHANNEL_READY') throw new Error(`not ready: ${A.ch?.state}`);

const preimage = new Uint8Array(32).fill(3);
const hash = ckbHash(preimage);
/** `batch` payments: A adds the TLCs in one round, B fulfils them in one round. */
function pay(): void {
  const add = {
    type: 'addTlc' as const,
    cmd: {
      // Small enough for tens of thousands of payments in one direction.
      amount: 1_000_000n,
      paymentHash: hash,
      expiry: 1_800_000_000_000n,
      hashAlgorithm: 0,
      onion: new Uint8Array(0),
    },
  };
  feed(A, B, { type: 'tlcBatch', cmds: Array.from({ length: batch }, () => add) });
  run(A, B);
  const next = (B.ch as Channel).nextTlcId.received;
  const removes = Array.from({ length: batch }, (_, i) => ({
    type: 'removeTlc' as const,
    id: next - BigInt(batch - i),
    reason: { preimage },
  }));
  feed(B, A, { type: 'tlcBatch', cmds: removes });
  run(A, B);
}
// Warm up V8's optimiser first, as a running node is.
for (let i = 0; i < Math.min(rounds, Math.ceil(300 / batch)); i++) {
  pay();
  await turn();
}
const t0 = performance.now();
for (let i = 0; i < rounds; i++) {
  pay();
  await turn();
}
const ms = performance.now() - t0;
const s0 = performance.now();
let bytes = 0;
for (let i = 0; i < 1000; i++) bytes = serializeChannel(A.ch as Channel).length;
const sms = (performance.now() - s0) / 1000;
console.log(
  JSON.stringify({
    tlc_payments: rounds * batch,
    rounds: rounds * 2,
    batch,
    ms_per_payment: +(ms / rounds / batch).toFixed(3),
    payments_per_s: +((rounds * batch * 1000) / ms).toFixed(1),
    balances: [A.ch?.localBalance.toString(), A.ch?.remoteBalance.toString()],
    state_json_bytes: bytes,
    serialize_ms: +sms.toFixed(3),
    hash: hashBackend().name,
    ...(pool ? { nonces_from_pool: pool.hits, nonces_made_on_the_spot: pool.misses } : {}),
  }),
);
pool?.stop();
