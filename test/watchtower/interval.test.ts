/**
 * `fiber.watchtower_check_interval_seconds` reaches the watchtower's timer (through
 * `node/rules.ts`); 0 means never, as fnn's help text says: no periodic pass is armed.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { channelSchema } from '../../src/channel/store.ts';
import { openDatabase } from '../../src/store/db.ts';
import { startNodeWatchtower } from '../../src/watchtower/index.ts';
import { watchtowerSchema } from '../../src/watchtower/store.ts';

afterEach(() => vi.restoreAllMocks());

const script = { codeHash: `0x${'42'.repeat(32)}`, hashType: 'data2', cellDeps: [] };
const chain = { channelScripts: async () => ({ fundingLock: script, commitmentLock: script }) } as never;

async function start(intervalMs: number | null) {
  const spy = vi.spyOn(globalThis, 'setTimeout');
  const tower = await startNodeWatchtower({
    db: openDatabase(':memory:', [channelSchema, watchtowerSchema]),
    chain,
    wallet: {} as never,
    intervalMs,
  });
  const delays = spy.mock.calls.map((c) => c[1]);
  await tower.stop();
  return delays;
}

describe('watchtower check interval', () => {
  it('arms its pass timer with the configured period', async () => {
    expect(await start(2000)).toEqual([2000]);
  });

  it('arms none for 0 ("never check")', async () => {
    expect(await start(null)).toEqual([]);
  });
});
