/**
 * The checks at the end of a chaos run, over what the nodes report once the network is quiet.
 * Pure: snapshots in, a list of violations out (empty when nothing was lost, created or left
 * half-done), so the rules can be tested on hand-made snapshots too.
 */

/** One channel as one of its two ends lists it (amounts in shannons). */
export interface ChannelView {
  channelId: string;
  state: string;
  local: bigint;
  remote: bigint;
  offered: bigint;
  received: bigint;
}

/** A payment as its payer's store has it, with what its custom record says it was for. */
export interface PayerRecord {
  payer: string;
  hash: string;
  status: string;
  fee: bigint;
  /** From the run's tag in the payment's custom records: whom it paid, and how much. */
  payee: string;
  amount: bigint;
}

export interface Snapshot {
  /** node → channel id → that node's view of the channel. */
  channels: Map<string, Map<string, ChannelView>>;
  /** Every payment of every payer. */
  payments: PayerRecord[];
  /** payee → payment hash → invoice status, for every invoice the run created. */
  invoices: Map<string, Map<string, string>>;
}

export interface AuditInput {
  /** The nodes in line order: a payment between two of them is forwarded by every node between. */
  line: string[];
  before: Snapshot;
  after: Snapshot;
}

const sum = (xs: bigint[]) => xs.reduce((a, b) => a + b, 0n);

/** The sum of a node's spendable balance over its channels. */
function holdings(s: Snapshot, node: string): bigint {
  return sum([...(s.channels.get(node)?.values() ?? [])].map((c) => c.local));
}

/**
 * The same network state twice: every channel view, payment status and invoice status equal.
 * A snapshot is read node by node, so a payment can move between the reads (a payee read before
 * its TLC arrived, a payer read after Success); two equal quiet snapshots in a row show that
 * nothing was moving while they were taken.
 */
export function sameSnapshot(a: Snapshot, b: Snapshot): boolean {
  const key = (s: Snapshot) =>
    JSON.stringify(
      {
        channels: [...s.channels].map(([n, m]) => [n, [...m.values()]]),
        payments: s.payments.map((p) => [p.payer, p.hash, p.status, p.fee]),
        invoices: [...s.invoices].map(([n, m]) => [n, [...m]]),
      },
      (_, v) => (typeof v === 'bigint' ? v.toString() : v),
    );
  return key(a) === key(b);
}

export function audit({ line, before, after }: AuditInput): string[] {
  const out: string[] = [];

  // 1. Every payment ended.
  for (const p of after.payments)
    if (p.status !== 'Success' && p.status !== 'Failed')
      out.push(`payment ${p.hash} of ${p.payer} still ${p.status}`);

  // 2. Invoice and payment agree: paid exactly when the payer saw Success.
  const byHash = new Map(after.payments.map((p) => [p.hash, p]));
  for (const [payee, invoices] of after.invoices) {
    for (const [hash, status] of invoices) {
      const p = byHash.get(hash);
      if (status === 'Received') out.push(`invoice ${hash} of ${payee} stuck in Received`);
      if (p?.status === 'Success' && status !== 'Paid')
        out.push(`payment ${hash} succeeded at ${p.payer} but ${payee}'s invoice is ${status}`);
      if (p?.status !== 'Success' && status === 'Paid')
        out.push(
          `invoice ${hash} of ${payee} Paid but the payment is ${p?.status ?? 'unknown to its payer'}`,
        );
    }
  }

  // 3. Each channel: both ends agree, nothing pending, the total unchanged since the start.
  for (const [node, chans] of after.channels) {
    for (const [id, c] of chans) {
      if (c.state !== 'CHANNEL_READY') out.push(`${node}: channel ${id} is ${c.state}`);
      if (c.offered !== 0n || c.received !== 0n) out.push(`${node}: channel ${id} has TLCs pending`);
      const start = before.channels.get(node)?.get(id);
      const total = c.local + c.remote + c.offered + c.received;
      if (start && total !== start.local + start.remote + start.offered + start.received)
        out.push(`${node}: channel ${id} holds ${total}, ${start.local + start.remote} at the start`);
      for (const [peer, theirs] of after.channels) {
        const t = peer === node ? undefined : theirs.get(id);
        if (t && (t.local !== c.remote || t.remote !== c.local))
          out.push(`channel ${id}: ${node} says ${c.local}/${c.remote}, ${peer} says ${t.remote}/${t.local}`);
      }
    }
  }

  // 4. Each node's holdings moved by exactly what its payments say: received − paid − fees paid
  // + fees earned forwarding.
  const delta = new Map(line.map((n) => [n, 0n]));
  const add = (n: string, x: bigint) => delta.set(n, (delta.get(n) ?? 0n) + x);
  for (const p of after.payments) {
    if (p.status !== 'Success') continue;
    add(p.payer, -(p.amount + p.fee));
    add(p.payee, p.amount);
    const [i, j] = [line.indexOf(p.payer), line.indexOf(p.payee)].sort((a, b) => a - b);
    const between = line.slice(i! + 1, j);
    // A line charges the same fee at each hop only when there is one: say so rather than guess.
    if (between.length > 1)
      out.push(`payment ${p.hash} crossed ${between.length} forwarders: fee split unknown`);
    else if (between.length === 1) add(between[0]!, p.fee);
  }
  for (const n of line) {
    const moved = holdings(after, n) - holdings(before, n);
    if (moved !== delta.get(n))
      out.push(`${n}: holdings moved by ${moved}, its payments account for ${delta.get(n)}`);
  }
  return out;
}
