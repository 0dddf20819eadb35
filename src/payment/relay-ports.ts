/**
 * What the relay (`relay.ts`) is given: the TLCs the channel layer hands it, the channel layer as
 * the relay sees it (`channel-port.ts` builds it), and the relay's options.
 */
import type { InvoiceService } from '../invoice/index.ts';
import type { TlcLinks } from './links.ts';
import type { PeeledOnion } from './onion/packet.ts';
import type { PaymentRequest } from './request.ts';
import type { PaymentService } from './service.ts';

type UdtTypeScript = NonNullable<PaymentRequest['udtTypeScript']>;

export interface IncomingTlc {
  channelId: string;
  tlcId: bigint;
  amount: bigint;
  paymentHash: string;
  expiry: bigint;
  hashAlgorithm: number;
  onion: Uint8Array;
}

export interface ForwardPolicy {
  /** Our fee on this channel, ppm. */
  feeRate: bigint;
  tlcMinValue: bigint;
  tlcExpiryDelta: bigint;
  enabled: boolean;
  /** Canonical UDT of the channel, or null for CKB. */
  udt: string | null;
  /** The channel's UDT type script as send_payment names one (`udt_type_script`), null for CKB. */
  udtScript: UdtTypeScript | null;
  channelOutpoint: string;
}

/** The channel layer as the relay sees it. */
export interface ChannelTlcPort {
  /** Our channel whose funding transaction is `fundingTxHash` (its output 0), if any. */
  channelByFundingTx(fundingTxHash: string): { channelId: string; policy: ForwardPolicy } | undefined;
  policyOf(channelId: string): ForwardPolicy | undefined;
  /** Offers a TLC; resolves with its id once it is in the channel; rejects with a TlcErrorCode name. */
  addTlc(
    channelId: string,
    tlc: { amount: bigint; paymentHash: string; expiry: bigint; hashAlgorithm: number; onion: Uint8Array },
  ): Promise<bigint>;
  fulfilTlc(channelId: string, tlcId: bigint, preimage: Uint8Array): Promise<void>;
  failTlc(channelId: string, tlcId: bigint, errorPacket: Uint8Array): Promise<void>;
  /**
   * The TLCs we offered on the channel of `channelOutpoint` (in any state) that it still holds
   * or will re-send; `onionKey` is the onion's session key (`onionKeyOf`).
   */
  offeredTlcs(
    channelOutpoint: string,
  ): { channelId: string; tlcId: bigint; paymentHash: string; amount: bigint; onionKey: string }[];
  /**
   * The TLCs the peers offered us that both commitments hold, that carry an onion, and whose
   * removal nothing has started (not even one stepped back to be re-sent), on channels that can
   * still remove them: what the relay may have left unhandled when the node stopped.
   */
  unresolvedReceived(): IncomingTlc[];
}

export interface RelayOptions {
  nodeSecretKey: Uint8Array;
  nodePubkey: string;
  channels: ChannelTlcPort;
  links: TlcLinks;
  invoices: InvoiceService;
  payments: PaymentService;
  now?: () => number;
  /** How long MPP parts wait for the rest of the total (the reference's 120 s). */
  mppHoldTimeoutMs?: number;
  /** The node's least TLC expiry delta (`codec/epoch-rules.ts`); 9,600,000 ms when absent. */
  minTlcExpiryDelta?: bigint;
  logger?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** This node is failing a TLC it received, with this onion error code (the event log). */
  onFailing?: (channelId: string, tlcId: bigint, code: string) => void;
  /** Onions peeled while their rounds went on (`onion-prepeel.ts`); absent: peeled on commit. */
  prePeeled?: { take(onion: Uint8Array, paymentHash: string): PeeledOnion | undefined };
}
