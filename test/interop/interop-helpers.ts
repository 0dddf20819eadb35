/** What the interop files share: amounts in hex, token amounts, and a patient poll. */
export const CKB = 100_000_000n;
export const big = (h: string) => BigInt(h);
export const hex = (n: bigint) => `0x${n.toString(16)}`;
/** A token cell's amount: the first 16 bytes of its data, little-endian. */
export const leAmount = (data: string) => BigInt(`0x${data.slice(2, 34).match(/../g)!.reverse().join('')}`);

/**
 * Polls `fn` every second until it returns something other than undefined (a throw counts as
 * not yet: fiber-js answers errors while it catches up); fails after `ms`.
 */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}
