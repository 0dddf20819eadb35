import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { identityFromSecret } from '../src/crypto/identity.ts';

const VECTORS = new URL('./fixtures/fiber-test-nodes/', import.meta.url);

const EXPECTED: Record<string, [string, string]> = {
  bootnode: [
    '0230d07050858e77ebc92b56f8f3601efdf6dc23e2ddc9217466f60cd7a78a0828',
    'Qmbyc4rhwEwxxSQXd5B4Ej4XkKZL6XLipa3iJrnPL9cjGR',
  ],
  '1': [
    '02a64b8993f33b2ebd37a4de1c9441f491291a4e779da8e519bcfb7c1f3f56c9c0',
    'QmbvRjJHAQDmj3cgnUBGQ5zVnGxUKwb2qJygwNs2wk41h8',
  ],
  '2': [
    '02bcbd0e0d811d13363af1e5998f56e74e6aab8a7aa44005e1ce7d696a4d3f10f6',
    'QmSRcPqUn4aQrKHXyCDjGn2qBVf43tWBDS2Wj9QDUZXtZp',
  ],
  '3': [
    '03032b99943822e721a651c5a5b9621043017daa9dc3ec81d83215fd2e25121187',
    'QmaFDJb9CkMrXy7nhTWBY5y9mvuykre3EzzRsCJUAVXprZ',
  ],
};

describe('node identity', () => {
  for (const [node, [pubkey, peerId]] of Object.entries(EXPECTED)) {
    it(`derives pubkey and peer id of test node ${node}`, () => {
      const sk = new Uint8Array(fs.readFileSync(new URL(`${node}/fiber/sk`, VECTORS)));
      const id = identityFromSecret(sk);
      expect(id.pubkeyHex).toBe(pubkey);
      expect(id.peerId).toBe(peerId);
    });
  }
});
