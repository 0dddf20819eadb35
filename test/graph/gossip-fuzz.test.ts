/** Hostile gossip: random and mutated messages give typed errors or rejections, never a crash. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MoleculeError } from '../../src/codec/molecule.ts';
import { identityFromSecret } from '../../src/crypto/identity.ts';
import { decodeGossipMessage, encodeGossipMessage, type GossipMessage } from '../../src/graph/messages.ts';
import { createGraphService } from '../../src/graph/service.ts';
import { graphSchema } from '../../src/graph/store.ts';
import { openDatabase } from '../../src/store/db.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';
import { outPoint, party, signedChannel, signedUpdate, trustingFunding } from './gossip-helpers.ts';

const CHAIN = new Uint8Array(32).fill(0xdd);
const ca = signedChannel(party(1), party(2), CHAIN, outPoint(1));
const cu = signedUpdate(party(1), ca);
const SAMPLES: GossipMessage[] = [
  { type: 'BroadcastMessagesFilterResult', messages: [{ type: 'ChannelAnnouncement', value: ca }] },
  { type: 'GetBroadcastMessagesResult', id: 5n, messages: [{ type: 'ChannelUpdate', value: cu }] },
  {
    type: 'QueryBroadcastMessages',
    id: 1n,
    chainHash: CHAIN,
    queries: [{ channelOutpoint: ca.channelOutpoint, flags: 1 }],
  },
  { type: 'GetBroadcastMessages', id: 2n, chainHash: CHAIN, afterCursor: new Uint8Array(45), count: 10 },
];
const ENCODED = SAMPLES.map(encodeGossipMessage);

function decodeOutcome(b: Uint8Array): 'ok' | 'malformed' {
  try {
    decodeGossipMessage(b);
    return 'ok';
  } catch (e) {
    if (e instanceof MoleculeError) return 'malformed';
    throw e;
  }
}

/** A gossip "peer" that feeds payloads to the service and records what it answers. */
function harness() {
  let handler: ((pk: string, p: Uint8Array) => void | Promise<void>) | undefined;
  const sent: Uint8Array[] = [];
  const peers = {
    onGossip(h: typeof handler) {
      handler = h;
      return () => {};
    },
    sendGossip(_pk: string, p: Uint8Array) {
      sent.push(p);
    },
    drop: () => {},
    list: () => [{ pubkey: 'ff'.repeat(33), outbound: true, init: {} }],
    on: () => {},
    off: () => {},
  };
  const svc = createGraphService({
    db: openDatabase(':memory:', [graphSchema]),
    identity: identityFromSecret(party(9).sk),
    chainHash: CHAIN,
    peers,
    funding: trustingFunding(),
    timers: false,
  });
  svc.start();
  return { svc, sent, feed: (p: Uint8Array) => handler!('ff'.repeat(33), p) };
}

describe('gossip fuzz', () => {
  it('random bytes decode or fail with MoleculeError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2000 }), (b) => {
        decodeOutcome(b);
      }),
      { numRuns: fuzzRuns(500) },
    );
  });

  it('byte mutations of valid messages decode or fail with MoleculeError', () => {
    fc.assert(
      fc.property(fc.nat(ENCODED.length - 1), fc.nat(), fc.integer({ min: 1, max: 255 }), (k, at, x) => {
        const m = ENCODED[k]!.slice();
        m[at % m.length]! ^= x;
        decodeOutcome(m);
      }),
      { numRuns: fuzzRuns(1000) },
    );
    // truncations never decode as the original
    for (const e of ENCODED)
      for (let n = 0; n < e.length; n += 7) expect(decodeOutcome(e.subarray(0, n))).toBe('malformed');
  });

  it('the service survives random and mutated input, and still accepts a valid channel afterwards', async () => {
    const h = harness();
    const inputs: Uint8Array[] = [];
    fc.assert(
      fc.property(
        fc.nat(ENCODED.length - 1),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        fc.uint8Array({ maxLength: 300 }),
        (k, at, x, rnd) => {
          const m = ENCODED[k]!.slice();
          m[at % m.length]! ^= x;
          inputs.push(m, rnd);
        },
      ),
      { numRuns: fuzzRuns(200) },
    );
    for (const p of inputs) await h.feed(p);
    // mutated announcements that still decode were rejected (bad signatures), so the graph is empty
    expect(h.svc.graph.channelCount).toBe(0);
    await h.feed(ENCODED[0]!);
    expect(h.svc.graph.channelCount).toBe(1);
    await h.feed(
      encodeGossipMessage({
        type: 'BroadcastMessagesFilterResult',
        messages: [{ type: 'ChannelUpdate', value: cu }],
      }),
    );
    const [channel] = [...h.svc.graph.channels()];
    expect(channel!.update1 ?? channel!.update2).toBeTruthy();
    // queries are answered; out-of-range counts are ignored as the reference does
    h.sent.length = 0;
    await h.feed(ENCODED[2]!);
    expect(decodeGossipMessage(h.sent[0]!).type).toBe('QueryBroadcastMessagesResult');
    h.sent.length = 0;
    await h.feed(
      encodeGossipMessage({
        type: 'GetBroadcastMessages',
        id: 3n,
        chainHash: CHAIN,
        afterCursor: new Uint8Array(45),
        count: 0,
      }),
    );
    await h.feed(
      encodeGossipMessage({
        type: 'GetBroadcastMessages',
        id: 4n,
        chainHash: CHAIN,
        afterCursor: new Uint8Array(45),
        count: 1001,
      }),
    );
    expect(h.sent).toHaveLength(0);
    await h.feed(ENCODED[3]!);
    const answer = decodeGossipMessage(h.sent[0]!);
    expect(answer.type === 'GetBroadcastMessagesResult' && answer.messages.length).toBe(2);
    await h.svc.stop();
  });

  it('a sync answer that does not move past the cursor ends the pull (no endless loop)', async () => {
    const h = harness();
    const first = decodeGossipMessage(h.sent[0]!);
    expect(first.type).toBe('GetBroadcastMessages');
    if (first.type !== 'GetBroadcastMessages') return;
    // an old, valid announcement: its cursor is before the one asked for
    const old = createGraphService({
      db: openDatabase(':memory:', [graphSchema]),
      identity: identityFromSecret(party(5).sk),
      chainHash: CHAIN,
      timers: false,
      now: () => Date.now() - 30 * 86_400_000,
    }).announceNode({ nodeName: 'old' });
    h.sent.length = 0;
    await h.feed(
      encodeGossipMessage({
        type: 'GetBroadcastMessagesResult',
        id: first.id,
        messages: [{ type: 'NodeAnnouncement', value: old }],
      }),
    );
    expect(h.sent.map((p) => decodeGossipMessage(p).type)).toEqual(['BroadcastMessagesFilter']);
    await h.svc.stop();
  });
});
