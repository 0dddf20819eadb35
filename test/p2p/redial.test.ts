/** The redial schedule: backoff, reset on success, hopeless errors abandoned; bootnodes. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SILENT } from '../../src/p2p/dispatcher.ts';
import { PeerError } from '../../src/p2p/errors.ts';
import { Redialer } from '../../src/p2p/redial.ts';
import { startManager, stopAll, tcpAddr, until } from './helpers.ts';

afterEach(async () => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  await stopAll();
});

describe('Redialer', () => {
  it('doubles the delay up to the cap, resets after a success, drops hopeless addresses', async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, 'random').mockReturnValue(0.5); // jitter factor exactly 1
    let attempts = 0;
    const dropped: string[] = [];
    // Told by its code, not its text: an uncoded error that reads like a hopeless one is retried.
    let fail: Error = new Error('peer id not match: said by something else than the dialler');
    const r = new Redialer(
      { baseMs: 100, maxMs: 400 },
      {
        dial: async () => {
          attempts++;
          throw fail;
        },
        connected: () => false,
        dropped: (a) => dropped.push(a),
      },
      SILENT,
    );
    const addr = '/ip4/127.0.0.1/tcp/1';
    r.want(addr);
    await vi.advanceTimersByTimeAsync(0);
    expect(attempts).toBe(1); // at once
    // Delays after attempt n: 100 × 2^n, capped at 400 → 200, 400, 400.
    await vi.advanceTimersByTimeAsync(199);
    expect(attempts).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts).toBe(2);
    await vi.advanceTimersByTimeAsync(400);
    expect(attempts).toBe(3);
    await vi.advanceTimersByTimeAsync(400);
    expect(attempts).toBe(4);
    r.succeeded(addr);
    fail = new PeerError('PeerIdMismatch', 'peer id not match: /ip4/127.0.0.1/tcp/1 is Qm…');
    await vi.advanceTimersByTimeAsync(400);
    expect(attempts).toBe(5);
    expect(dropped).toEqual([addr]);
    expect(r.has(addr)).toBe(false);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(attempts).toBe(5);
    r.stop();
  });
});

describe('bootnodes', () => {
  it('dials bootnodes at start, redials them, and survives malformed ones', async () => {
    const boot = await startManager();
    const node = await startManager({ bootnodes: [tcpAddr(boot), '/ip4/not-an-ip/tcp/1', '/garbage'] });
    await until(() => node.peersCount === 1 && boot.peersCount === 1, 'bootnode session');
    // Counted by the node's own 'connected' events: the counts alone can still read 1 while the
    // dropped session is being torn down.
    let reconnected = 0;
    node.on('connected', () => {
      reconnected++;
    });
    await boot.disconnect(node.identity.pubkeyHex);
    await until(() => reconnected > 0 && node.list().length === 1, 'the node to come back');
    expect(node.list()[0]!.pubkey).toBe(boot.identity.pubkeyHex);
  });
});
