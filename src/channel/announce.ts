/**
 * Public channels: the AnnouncementSignatures exchange, pure. Each side advertised an
 * announcement nonce in Open/Accept (present iff public, as the reference requires); once both
 * ChannelReady are in, each signs the announcement digest — ECDSA with its node key (done by the
 * shell, which holds that key) and a MuSig2 partial with its funding key and that nonce (used
 * once, then dropped) — and sends AnnouncementSignatures. With both, the aggregated BIP340
 * signature completes the ChannelAnnouncement, which the shell hands to the graph.
 * The digest itself comes from the shell (the graph layer defines the message).
 */
import { bytesToHex, hexToBytes, mol } from '../codec/index.ts';
import { aggregateFunding } from './commitment.ts';
import { keysOf } from './keys.ts';
import { signWithNonce, sorted2 } from './musig.ts';
import type { Channel, PartyParams } from './state.ts';
import type { Effect, Step } from './step.ts';
import type { AnnouncementSignatures } from './wire.ts';

const b = (h: string) => hexToBytes(h);
const h = (x: Uint8Array) => bytesToHex(x);

/** The 36-byte molecule OutPoint of the funding cell (output 0). */
export function fundingOutpointBytes(ch: Channel): Uint8Array {
  return mol.OutPoint.encode({ txHash: b(ch.fundingTxHash as string), index: 0 });
}

/** Our signatures over the digest the shell computed (with our node signature). */
export function signAnnouncement(ch: Channel, digest: Uint8Array, nodeSignature: Uint8Array): Step {
  const a = ch.announcement;
  if (!ch.isPublic || ch.state !== 'CHANNEL_READY' || !a?.myNonce || !a.theirNonce || a.myPartial)
    return { ch, effects: [] };
  const k = keysOf(ch);
  const remotePk = b((ch.remote as PartyParams).fundingPubkey);
  const partial = signWithNonce({
    mySecret: k.fundingKey,
    myPubkey: k.fundingPubkey,
    myNonce: { secret: b(a.myNonce.secret), public: b(a.myNonce.public) },
    theirPubkey: remotePk,
    theirNonce: b(a.theirNonce),
    keys: sorted2(k.fundingPubkey, remotePk),
    msg: digest,
  });
  const c: Channel = {
    ...ch,
    announcement: {
      ...a,
      myNonce: { secret: '0x', public: a.myNonce.public },
      digest: h(digest),
      myPartial: h(partial),
      myNodeSignature: h(nodeSignature),
    },
  };
  const send: Effect = {
    type: 'send',
    msg: {
      type: 'AnnouncementSignatures',
      value: {
        channelId: b(ch.id),
        channelOutpoint: fundingOutpointBytes(ch),
        nodeSignature,
        partialSignature: partial,
      },
    },
  };
  const agg = maybeComplete(c);
  return { ch: agg.ch, effects: [send, ...agg.effects] };
}

export function onAnnouncementSignatures(ch: Channel, m: AnnouncementSignatures): Step {
  if (!ch.isPublic || !ch.announcement || ch.announcement.theirPartial) return { ch, effects: [] };
  const c: Channel = {
    ...ch,
    announcement: {
      ...ch.announcement,
      theirPartial: h(m.partialSignature),
      theirNodeSignature: h(m.nodeSignature),
    },
  };
  return maybeComplete(c);
}

function maybeComplete(ch: Channel): Step {
  const a = ch.announcement;
  if (!a?.myPartial || !a.theirPartial || !a.digest || a.signature) return { ch, effects: [] };
  const sig = aggregateFunding(ch, 'announcement', {
    myNonce: b(a.myNonce?.public as string),
    myPartial: b(a.myPartial),
    theirNonce: b(a.theirNonce as string),
    theirPartial: b(a.theirPartial),
    msg: b(a.digest),
  });
  const c: Channel = { ...ch, announcement: { ...a, signature: h(sig) } };
  return {
    ch: c,
    effects: [
      {
        type: 'publishAnnouncement',
        localNodeSignature: b(a.myNodeSignature as string),
        remoteNodeSignature: b(a.theirNodeSignature as string),
        ckbSignature: sig,
      },
    ],
  };
}
