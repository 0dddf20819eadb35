/**
 * `npm run bench:invoice`: invoice strings encoded (compress + sign + bech32m) and decoded (bech32m
 * + decompress + molecule + signature recovery and verification) per second, plus the arcode
 * coder alone, on the reference vector V1 and on a node-made invoice. Plain loops timed with
 * performance.now(), after a warm-up.
 */
import fs from 'node:fs';
import { arCompress, arDecompress } from '../src/codec/arcode.ts';
import { publicKeyOf } from '../src/crypto/identity.ts';
import { decodeInvoice, encodeInvoice, signInvoice } from '../src/invoice/codec.ts';
import { encodeRawInvoiceData } from '../src/invoice/molecule.ts';
import type { Invoice } from '../src/invoice/types.ts';
import { V1 } from '../test/invoice/vectors.ts';
import { rate } from './rate.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const SK = new Uint8Array(
  fs.readFileSync(new URL('../test/fixtures/fiber-test-nodes/1/fiber/sk', import.meta.url)),
);

const v1 = decodeInvoice(V1);
const unsigned: Invoice = { ...v1, signature: undefined };
delete unsigned.signature;
const made = signInvoice(
  {
    currency: 'Fibd',
    amount: 100_000_000n,
    data: {
      timestamp: BigInt(Date.now()),
      paymentHash: new Uint8Array(32).fill(9),
      attrs: [
        { kind: 'Description', value: 'a typical invoice description' },
        { kind: 'ExpiryTime', seconds: 3600n },
        { kind: 'FinalHtlcMinimumExpiryDelta', value: 9_600_000n },
        { kind: 'HashAlgorithm', value: 'sha256' },
        { kind: 'PayeePublicKey', pubkey: publicKeyOf(SK) },
      ],
    },
  },
  SK,
);
const madeString = encodeInvoice(made);
const molecule = encodeRawInvoiceData(v1.data);
const compressed = arCompress(molecule);

const rows: [string, number][] = [
  ['decode V1 (verify signature)', rate(() => decodeInvoice(V1))],
  ['decode V1 trusted (no signature)', rate(() => decodeInvoice(V1, { trusted: true }))],
  ['encode V1 (already signed)', rate(() => encodeInvoice(v1))],
  ['sign + encode (node-made)', rate(() => encodeInvoice(signInvoice(made, SK)))],
  ['decode node-made', rate(() => decodeInvoice(madeString))],
  ['encode unsigned', rate(() => encodeInvoice(unsigned))],
  [`arcode compress ${molecule.length} B`, rate(() => arCompress(molecule))],
  [`arcode decompress ${compressed.length} B`, rate(() => arDecompress(compressed))],
];

console.log(`invoice codec, ${SECONDS} s per row (Node ${process.version})`);
console.log('operation'.padEnd(34) + 'per second'.padStart(12));
for (const [name, perSecond] of rows) {
  console.log(name.padEnd(34) + Math.round(perSecond).toLocaleString('en-US').padStart(12));
}
