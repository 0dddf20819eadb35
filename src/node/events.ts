/**
 * Channel and payment events in the node log, one structured line each with the channel id or
 * payment hash as fields: a channel opened, ready, closed; a TLC added, settled, failed (with the
 * reason when this node failed it); a payment's outcome. Derived from the events the services
 * already publish, after they are committed. All at info, but a TLC added or settled and a payment
 * sent or succeeded at debug: lines per TLC or per successful payment are too many for a busy
 * node's info log (README, Metrics and logs); a failure stays at info.
 */
import type { Channel, TlcNotice } from '../channel/index.ts';
import type { StoreChange } from '../store/index.ts';
import type { Logger } from './log.ts';

/** Failure reasons given by the relay, kept until the failure is committed in the channel. */
const MAX_PENDING_REASONS = 10_000;

const OPEN_OR_DONE = new Set(['CHANNEL_READY', 'SHUTTING_DOWN', 'CLOSED']);

export class NodeEventLog {
  /** Last state seen per channel (temporary id), to log transitions only. */
  private readonly states = new Map<string, string>();
  private readonly reasons = new Map<string, string>();
  private readonly openPayments = new Set<string>();
  /** Offered TLCs logged as added (`channel:tlc`), until they are removed. */
  private readonly offered = new Set<string>();

  constructor(private readonly log: Logger) {}

  /** A committed change of a channel (`ChannelService` `onChange`). */
  channel(ch: Channel): void {
    const before = this.states.get(ch.tempId);
    this.offeredTlcs(ch, before === undefined);
    if (before === ch.state) return;
    // A closed channel is forgotten: its later changes (settlement) are first sights, not news.
    if (ch.state === 'CLOSED') this.states.delete(ch.tempId);
    else this.states.set(ch.tempId, ch.state);
    const fields = {
      event: '',
      channel_id: ch.id,
      peer: ch.peer,
      state: ch.state,
      local_balance: ch.localBalance.toString(),
      remote_balance: ch.remoteBalance.toString(),
    };
    // First sight in this process of a channel already open: a restart, not news.
    if (before === undefined && OPEN_OR_DONE.has(ch.state)) return;
    if (before === undefined)
      this.log.info({ ...fields, event: 'channel_opened', acceptor: ch.isAcceptor }, 'channel opened');
    else if (ch.state === 'CHANNEL_READY')
      this.log.info({ ...fields, event: 'channel_ready', funding_tx: ch.fundingTxHash }, 'channel ready');
    else if (ch.state === 'SHUTTING_DOWN')
      this.log.info({ ...fields, event: 'channel_closing' }, 'channel closing');
    else if (ch.state === 'CLOSED')
      this.log.info({ ...fields, event: 'channel_closed', flags: ch.flags }, 'channel closed');
  }

  /**
   * The channel layer's TLC news covers received TLCs only: an offered one is news once it is
   * committed in both commitments, seen in the channel's state. On the first sight of a channel
   * (a restart) its pending TLCs are old news.
   */
  private offeredTlcs(ch: Channel, firstSight: boolean): void {
    if (ch.state === 'CLOSED' || !this.log.isLevelEnabled('debug')) return;
    for (const t of ch.tlcs) {
      if (!t.offered || t.added !== 'committed' || t.removal) continue;
      const key = `${ch.id}:${t.id}`;
      if (this.offered.has(key)) continue;
      this.offered.add(key);
      if (firstSight) continue;
      this.log.debug(
        {
          event: 'tlc_added',
          channel_id: ch.id,
          tlc_id: t.id.toString(),
          payment_hash: t.paymentHash,
          amount: t.amount.toString(),
          direction: 'offered',
          expiry: t.expiry.toString(),
        },
        'TLC added',
      );
    }
  }

  /** The relay is failing a TLC it received, for this reason (an onion error code). */
  failing(channelId: string, tlcId: bigint, reason: string): void {
    if (this.reasons.size >= MAX_PENDING_REASONS) this.reasons.clear();
    this.reasons.set(`${channelId}:${tlcId}`, reason);
  }

  /** TLC news of a channel (`ChannelService` `onTlc`): committed in both commitments. */
  tlc(channelId: string, n: TlcNotice): void {
    // The preimage arrived; the TLC is logged settled when its round ends ('fulfilled'). An
    // announced TLC is logged added when its round ends ('received').
    if (n.type === 'preimage' || n.type === 'announced') return;
    const t = n.tlc;
    if (t.offered) this.offered.delete(`${channelId}:${t.id}`);
    if ((n.type === 'received' || n.type === 'fulfilled') && !this.log.isLevelEnabled('debug')) return;
    const fields = {
      channel_id: channelId,
      tlc_id: t.id.toString(),
      payment_hash: t.paymentHash,
      amount: t.amount.toString(),
      direction: t.offered ? 'offered' : 'received',
    };
    if (n.type === 'received')
      this.log.debug({ ...fields, event: 'tlc_added', expiry: t.expiry.toString() }, 'TLC added');
    else if (n.type === 'fulfilled') this.log.debug({ ...fields, event: 'tlc_settled' }, 'TLC settled');
    else {
      const key = `${channelId}:${t.id}`;
      // An offered TLC's error is encrypted for the payer: only the payer's session reads it.
      const reason =
        n.type === 'dropped'
          ? 'dropped before the peer took it'
          : (this.reasons.get(key) ??
            (t.offered ? 'failed downstream (the reason is for the payer)' : 'failed'));
      this.reasons.delete(key);
      this.log.info({ ...fields, event: 'tlc_failed', reason }, 'TLC failed');
    }
  }

  /** A committed store change: a payment this node sends reaching its outcome. */
  storeChange(change: StoreChange): void {
    if (!('PutPaymentSession' in change)) return;
    const { payment_hash, payment_session } = change.PutPaymentSession;
    const s = payment_session as {
      status: string;
      created_at: number;
      last_updated_at: number;
      last_error?: string | null;
      request: { amount: string; target_pubkey?: string | null; keysend?: boolean | null };
    };
    if (s.status !== 'Success' && s.status !== 'Failed') {
      if (!this.openPayments.has(payment_hash)) {
        this.openPayments.add(payment_hash);
        this.log.debug(
          {
            event: 'payment_sent',
            payment_hash,
            amount: s.request.amount,
            target_pubkey: s.request.target_pubkey,
          },
          'payment sent',
        );
      }
      return;
    }
    // Saved again once final (or resumed final after a restart): logged once, when it ended here.
    if (!this.openPayments.delete(payment_hash)) return;
    const level = s.status === 'Success' ? 'debug' : 'info';
    this.log[level](
      {
        event: s.status === 'Success' ? 'payment_succeeded' : 'payment_failed',
        payment_hash,
        status: s.status,
        amount: s.request.amount,
        elapsed_ms: Math.max(0, s.last_updated_at - s.created_at),
        ...(s.status === 'Failed' ? { reason: s.last_error ?? null } : {}),
      },
      s.status === 'Success' ? 'payment succeeded' : 'payment failed',
    );
  }
}
