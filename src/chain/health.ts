/**
 * Keeps the chain client's status current when nothing else talks to the chain: every
 * `intervalMs` without an answer to some other call, it asks for the tip (one call in flight at
 * most; a public RPC endpoint sees no more calls than the node's own polling). The client's own
 * retries and backoff apply; the status flips to `unreachable` when they are spent and back to
 * `ok` on the first answer.
 */
import type { ChainClient } from './client.ts';

export function startChainProbe(client: ChainClient, intervalMs: number): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    const last = client.lastAnswerAt();
    if (last !== undefined && Date.now() - last < intervalMs) return;
    busy = true;
    client
      .tipBlockNumber()
      .catch(() => undefined) // recorded in client.status(); the client logs the failure
      .finally(() => {
        busy = false;
      });
  }, intervalMs);
  timer.unref?.();
  return () => clearInterval(timer);
}
