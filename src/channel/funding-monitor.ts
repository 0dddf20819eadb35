/**
 * The channel service's funding monitor: on a timer (two polls), openings stuck past the funding
 * timeout are aborted (`ChannelOpening.abortStaleOpenings`) and the funding cells of ready or
 * closing channels are checked for a commitment the peer put on chain (`ChainWatch.fundingSpent`).
 */
import type { ChainWatch, ChannelLogger } from './chain-watch.ts';
import { FundingSweep } from './funding-sweep.ts';
import type { ChannelOpening } from './opening.ts';
import type { ChannelServiceOptions } from './service-options.ts';
import type { StagedChannelStore } from './staged-store.ts';

export interface FundingMonitorOptions {
  /** The channel service's options (`pollMs`). */
  service: ChannelServiceOptions;
  store: StagedChannelStore;
  log: ChannelLogger;
  chainWatch: ChainWatch;
  opening: ChannelOpening;
  /** Whether the service stopped. */
  stopped(): boolean;
}

export class FundingMonitor {
  private fundingMonitor?: NodeJS.Timeout;
  private readonly fundingSweep = new FundingSweep();

  constructor(private readonly o: FundingMonitorOptions) {}

  /** Every two polls: stale openings are dropped, funding cells checked. */
  start(): void {
    let busy = false;
    const timer = setInterval(
      () => {
        if (busy || this.o.stopped()) return;
        busy = true;
        const all = this.o.store.list();
        this.o.opening.abortStaleOpenings(all);
        const open = this.fundingSweep.take(
          all.filter(
            (c) => c.state === 'CHANNEL_READY' || (c.state === 'SHUTTING_DOWN' && !c.shutdown?.force),
          ),
        );
        Promise.all(
          open.map((c) =>
            this.o.chainWatch
              .fundingSpent(c)
              .catch((e) =>
                this.o.log.warn({ channel: c.id, err: (e as Error).message }, 'funding check failed'),
              ),
          ),
        ).finally(() => {
          busy = false;
        });
      },
      (this.o.service.pollMs ?? 1000) * 2,
    );
    timer.unref?.();
    this.fundingMonitor = timer;
  }

  stop(): void {
    if (this.fundingMonitor) clearInterval(this.fundingMonitor);
  }
}
