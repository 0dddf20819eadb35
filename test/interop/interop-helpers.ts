/** What the interop files share: amounts in hex, token amounts, and a patient poll. */
import { beforeEach } from 'vitest';
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

/** What a failed interop test prints about the two nodes, so that a CI log says what happened. */
export interface Explainable {
  ref?: { logs: string[]; errors: string[] };
  strandOutputs?: () => { name: string; text: string }[];
}

/**
 * Prints, for every failed test of the file, fiber-js's panics, errors and last log lines (its
 * console, styling stripped) and the tail of each Strand node's output.
 */
export function explainFailures(what: () => Explainable | undefined): void {
  beforeEach(({ onTestFailed }) =>
    onTestFailed(() => {
      const w = what();
      if (!w) return;
      const plain = (l: string) => l.replace(/%c/g, '').replace(/ color: .*$/, '');
      const logs = (w.ref?.logs ?? []).map(plain);
      const bad = logs.filter((l) => /panic|ERROR|WARN/.test(l)).slice(-40);
      const parts = [
        `--- fiber-js page errors: ${w.ref?.errors.join(' | ') || 'none'}`,
        `--- fiber-js panics, errors and warnings (last 40):\n${bad.join('\n')}`,
        `--- fiber-js last 40 lines:\n${logs.slice(-40).join('\n')}`,
        ...(w.strandOutputs?.() ?? []).map((o) => `--- ${o.name} output (tail):\n${o.text.slice(-4000)}`),
      ];
      console.log(parts.join('\n'));
    }),
  );
}
