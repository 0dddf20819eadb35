/**
 * The numbers of a traffic run (`strand devnet traffic`), kept apart from the network so they can
 * be checked on their own: counts, latency percentiles, fees, and the live line and summary text.
 */

/** One payment's outcome. `latencyMs` is the payer's own `last_updated_at - created_at`. */
export type Outcome =
  | { kind: 'success'; latencyMs: number; fee: bigint }
  | { kind: 'failed'; reason: string }
  /** `send_payment` refused it (no route, no balance…): no payment exists at the payer. */
  | { kind: 'rejected'; reason: string };

export interface TrafficSummary {
  sent: number;
  succeeded: number;
  failed: number;
  rejected: number;
  /** Still in flight when the run gave up waiting for them. */
  unfinished: number;
  /** Not started because the in-flight cap was reached (the network is slower than --tps). */
  skipped: number;
  elapsed_s: number;
  /** Payments that succeeded per second of the run. */
  tps: number;
  success_rate: number;
  latency_ms: { p50: number | null; p99: number | null; max: number | null };
  /** Total fees paid, in shannons. */
  fees: string;
  /** Failure and rejection reasons, with how often each happened. */
  reasons: Record<string, number>;
}

/** Nearest-rank percentile of an ascending list; null when empty. */
export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export class TrafficStats {
  sent = 0;
  skipped = 0;
  inFlight = 0;
  private readonly latencies: number[] = [];
  private failed = 0;
  private rejected = 0;
  private fees = 0n;
  private readonly reasons = new Map<string, number>();

  constructor(private readonly startedAt: number) {}

  record(o: Outcome): void {
    if (o.kind === 'success') {
      this.latencies.push(o.latencyMs);
      this.fees += o.fee;
      return;
    }
    if (o.kind === 'failed') this.failed++;
    else this.rejected++;
    this.reasons.set(o.reason, (this.reasons.get(o.reason) ?? 0) + 1);
  }

  summary(now: number): TrafficSummary {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const elapsed = Math.max(0.001, (now - this.startedAt) / 1000);
    const finished = sorted.length + this.failed + this.rejected;
    return {
      sent: this.sent,
      succeeded: sorted.length,
      failed: this.failed,
      rejected: this.rejected,
      unfinished: this.inFlight,
      skipped: this.skipped,
      elapsed_s: Math.round(elapsed * 10) / 10,
      tps: Math.round((sorted.length / elapsed) * 100) / 100,
      success_rate: finished === 0 ? 0 : sorted.length / finished,
      latency_ms: { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1) ?? null },
      fees: this.fees.toString(),
      reasons: Object.fromEntries(this.reasons),
    };
  }
}

const ms = (v: number | null) => (v === null ? '-' : `${v} ms`);
const pct = (r: number) => `${(r * 100).toFixed(1)}%`;
const ckb = (shannons: string) => `${(Number(shannons) / 1e8).toFixed(8).replace(/\.?0+$/, '')} CKB`;

/** The live line, printed about once a second. */
export function formatLive(s: TrafficSummary): string {
  return (
    `${s.elapsed_s.toFixed(0).padStart(4)} s  sent ${s.sent}  ok ${s.succeeded}  failed ${s.failed + s.rejected}` +
    `  in flight ${s.unfinished}  tps ${s.tps.toFixed(2)}  success ${pct(s.success_rate)}` +
    `  p50 ${ms(s.latency_ms.p50)}  p99 ${ms(s.latency_ms.p99)}  fees ${ckb(s.fees)}`
  );
}

/** The summary at the end. */
export function formatSummary(s: TrafficSummary): string {
  const lines = [
    `payments sent     ${s.sent}${s.skipped ? ` (${s.skipped} more skipped: in-flight cap reached)` : ''}`,
    `succeeded         ${s.succeeded}`,
    `failed            ${s.failed}`,
    `rejected          ${s.rejected}  (send_payment refused them)`,
    `unfinished        ${s.unfinished}`,
    `success rate      ${pct(s.success_rate)}`,
    `throughput        ${s.tps.toFixed(2)} successful payments/s over ${s.elapsed_s} s`,
    `latency           p50 ${ms(s.latency_ms.p50)}, p99 ${ms(s.latency_ms.p99)}, max ${ms(s.latency_ms.max)}`,
    `fees paid         ${ckb(s.fees)}`,
  ];
  for (const [reason, n] of Object.entries(s.reasons)) lines.push(`  ${n} × ${reason}`);
  return lines.join('\n');
}
