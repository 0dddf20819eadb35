/** What every devnet test file needs: amounts in hex and a poll until a value shows up. */
import fs from 'node:fs';
import { createClient } from '../../src/client/index.ts';
import type { RpcClient } from '../../src/rpc/client.ts';
export const CKB = 100_000_000n;
export const big = (hex: string) => BigInt(hex);
export const hex = (n: bigint) => `0x${n.toString(16)}`;

/**
 * A Strand node's client, through `strand/client` (dogfood), in the shape these files use:
 * `call` stays untyped because they send malformed params on purpose. Failures are `RpcError`
 * (`code`, `message`, `data`), as `RpcCallError` was.
 */
export function nodeClient(url: string): RpcClient {
  const client = createClient(url);
  return { url, call: (method, params) => client.request(method, params) as Promise<never> };
}

/** Polls `fn` until it returns something other than undefined, or fails after `ms`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  ms = 90_000,
  pollMs = 300,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * `until`, and on a timeout the last lines of `logFile` go with the error: a wait that fails on
 * CI says what the node was doing.
 */
export async function untilOrTell<T>(
  logFile: string,
  what: string,
  fn: () => Promise<T | undefined>,
  ms?: number,
): Promise<T> {
  try {
    return await until(what, fn, ms);
  } catch (e) {
    let tail = '(no log)';
    try {
      tail = fs.readFileSync(logFile, 'utf8').split('\n').slice(-60).join('\n');
    } catch {}
    throw new Error(`${(e as Error).message}\n--- last lines of ${logFile}:\n${tail}`);
  }
}
