/** The chain probe: asks for the tip while nothing else gets an answer, and stops when told. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createChainClient } from '../../src/chain/client.ts';
import { startChainProbe } from '../../src/chain/health.ts';
import { eventually } from '../helpers/node-process.ts';
import { FixtureChain, fixture } from './fixture-chain.ts';

let chain: FixtureChain | undefined;
let stop: (() => void) | undefined;
afterEach(async () => {
  stop?.();
  await chain?.down();
});

describe('startChainProbe', () => {
  it('finds an outage and the return with no other call, and stops asking once stopped', async () => {
    chain = await FixtureChain.start(fixture('chain.json'));
    const c = chain;
    const client = createChainClient({ rpcUrl: c.url, attempts: 2, backoffMs: 5 });
    stop = startChainProbe(client, 20);
    await eventually(async () => c.calls('get_tip_block_number').length > 0, 'a probe');
    await c.down();
    await eventually(async () => client.status().state === 'unreachable', 'unreachable');
    await c.up();
    await eventually(async () => client.status().state === 'ok', 'ok again');
    stop();
    // Let a probe already in flight land, then nothing more comes.
    await new Promise((r) => setTimeout(r, 60));
    const after = c.requests.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(c.requests.length).toBe(after);
  });

  it('does not ask while other calls get answers; asks once they stop', async () => {
    chain = await FixtureChain.start(fixture('chain.json'));
    const c = chain;
    const client = createChainClient({ rpcUrl: c.url, attempts: 1 });
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    try {
      stop = startChainProbe(client, 1000);
      vi.advanceTimersByTime(500);
      await client.tipHeader(); // an answer half-way through the interval
      vi.advanceTimersByTime(500); // the tick: answered 500 ms ago, nothing to ask
      await client.tipHeader(); // a round trip: a probe sent at the tick would have landed first
      expect(c.calls('get_tip_block_number')).toHaveLength(0);
      vi.advanceTimersByTime(1000); // the next tick: no answer for 1000 ms
      await eventually(async () => c.calls('get_tip_block_number').length === 1, 'the probe');
    } finally {
      vi.useRealTimers();
    }
  });
});
