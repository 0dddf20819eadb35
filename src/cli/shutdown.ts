/** Signal handling of the commands that run a node: SIGTERM / SIGINT end the process, always. */

import type { StrandNode } from '../node/index.ts';
import { dropPendingLogs, flushLogsForExit } from '../node/index.ts';
import { onParentGone } from './parent-gone.ts';

/**
 * The first signal stops the node (bounded: see `StrandNode.stop`), flushes the log for at most
 * a second — stdout may have no reader left — and exits, 0 when everything stopped in order. A
 * second signal does not wait: the store closes and the process ends.
 */
export function exitOnSignals(node: StrandNode): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      node.log.warn({ signal }, 'second signal: exiting now');
      node.closeStore();
      dropPendingLogs(node.log);
      process.exit(1);
    }
    stopping = true;
    node.log.info({ signal }, 'shutting down');
    const clean = await node.stop();
    await flushLogsForExit(node.log);
    process.exit(clean ? 0 : 1);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  onParentGone(() => void shutdown('parent gone'));
}
