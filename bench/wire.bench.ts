/**
 * `npm run bench:wire`: channel messages encoded and decoded per second through the molecule
 * codecs of `channel/wire.ts` (each payment hop sends AddTlc, CommitmentSigned, RevokeAndAck and
 * RemoveTlc), and for comparison AddTlc through @ckb-ccc/core's `mol` codecs (the reason
 * `codec/schema.ts` exists rather than using them). Plain loops timed with performance.now(), after a warm-up.
 */
import { mol } from '@ckb-ccc/core';
import {
  type AddTlc,
  type ChannelMessage,
  decodeChannelBody,
  encodeChannelBody,
} from '../src/channel/wire.ts';
import { rate } from './rate.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);

const id = new Uint8Array(32).fill(1);
const messages: ChannelMessage[] = [
  {
    type: 'AddTlc',
    value: {
      channelId: id,
      tlcId: 7n,
      amount: 1_000_000_000n,
      paymentHash: new Uint8Array(32).fill(2),
      expiry: 1_800_000_000_000n,
      hashAlgorithm: 0,
      onionPacket: new Uint8Array(6500).fill(3),
    },
  },
  {
    type: 'CommitmentSigned',
    value: {
      channelId: id,
      fundingTxPartialSignature: new Uint8Array(32).fill(4),
      nextCommitmentNonce: new Uint8Array(66).fill(5),
    },
  },
  {
    type: 'RevokeAndAck',
    value: {
      channelId: id,
      revocationPartialSignature: new Uint8Array(32).fill(6),
      nextPerCommitmentPoint: new Uint8Array(33).fill(2),
      nextRevocationNonce: new Uint8Array(66).fill(8),
    },
  },
  { type: 'RemoveTlc', value: { channelId: id, tlcId: 7n, reason: { fulfill: new Uint8Array(32).fill(9) } } },
];

console.log(`channel wire codecs, ${SECONDS} s per row (Node ${process.version})`);
for (const m of messages) {
  const bytes = encodeChannelBody(m);
  const enc = rate(() => encodeChannelBody(m));
  const dec = rate(() => decodeChannelBody(m.type, bytes));
  const both = rate(() => decodeChannelBody(m.type, encodeChannelBody(m)));
  const k = (x: number) => `${(x / 1000).toFixed(0)}k/s`.padStart(8);
  console.log(`${m.type.padEnd(18)} encode ${k(enc)}  decode ${k(dec)}  encode+decode ${k(both)}`);
}

const cccAddTlc = mol.table({
  channelId: mol.Byte32,
  tlcId: mol.Uint64,
  amount: mol.Uint128,
  paymentHash: mol.Byte32,
  expiry: mol.Uint64,
  hashAlgorithm: mol.Uint8,
  onionPacket: mol.Bytes,
});
const add = messages[0]!.value as AddTlc;
const cccBoth = rate(() => cccAddTlc.decode(cccAddTlc.encode(add)), 1);
console.log(
  `${'AddTlc (ccc mol)'.padEnd(18)} encode+decode ${`${(cccBoth / 1000).toFixed(1)}k/s`.padStart(8)}`,
);
