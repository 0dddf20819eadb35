/** Transport codecs: ProtocolInfo (§10 vectors), version selection, FiberMessage/Init, multiaddrs. */
import { describe, expect, it } from 'vitest';
import { bytesToHex, hexToBytes } from '../../src/codec/hex.ts';
import {
  DEFAULT_FEATURES,
  decodeFiberMessage,
  encodeFiberMessage,
  featureNames,
} from '../../src/p2p/fiber-message.ts';
import { parseDialAddress } from '../../src/p2p/multiaddr.ts';
import { decodeProtocolInfo, encodeProtocolInfo, selectVersion } from '../../src/p2p/protocol-select.ts';

const hex = (b: Uint8Array) => bytesToHex(b, false);

describe('ProtocolInfo', () => {
  it('encodes the §10 request and failure reply byte for byte', () => {
    expect(hex(encodeProtocolInfo({ name: '/p2p/42', supportVersions: ['0.0.1'] }))).toBe(
      '280000000c00000017000000070000002f7032702f3432110000000800000005000000302e302e31',
    );
    expect(hex(encodeProtocolInfo({ name: '/p2p/42', supportVersions: [] }))).toBe(
      '1b0000000c00000017000000070000002f7032702f343204000000',
    );
  });

  it('decodes what the reference sent on stream 3 (captured)', () => {
    const b = hexToBytes('280000000c00000017000000070000002f7032702f3433110000000800000005000000302e302e31');
    expect(decodeProtocolInfo(b)).toEqual({ name: '/p2p/43', supportVersions: ['0.0.1'] });
  });

  it('selects versions from the top of both lists, as tentacle does', () => {
    expect(selectVersion(['0.0.1'], ['0.0.1'])).toBe('0.0.1');
    expect(selectVersion(['0.0.1', '0.0.2'], ['0.0.1', '0.0.3'])).toBe('0.0.1');
    expect(selectVersion(['0.0.1'], ['0.0.2'])).toBeUndefined();
    expect(selectVersion(['0.0.1'], [])).toBeUndefined();
  });

  it('rejects truncated, inconsistent and non-UTF-8 encodings', () => {
    const good = encodeProtocolInfo({ name: '/p2p/42', supportVersions: ['0.0.1'] });
    expect(() => decodeProtocolInfo(good.subarray(0, 20))).toThrow(/size/);
    const badUtf8 = encodeProtocolInfo({ name: '/p2p/4\u00e9', supportVersions: [] });
    badUtf8[badUtf8.indexOf(0xc3)] = 0xff;
    expect(() => decodeProtocolInfo(badUtf8)).toThrow(/UTF-8/);
    const badOffset = good.slice();
    badOffset[8] = 0xff; // second offset beyond the end
    expect(() => decodeProtocolInfo(badOffset)).toThrow();
  });
});

describe('FiberMessage', () => {
  const chainHash = hexToBytes('92b197aa1fba0f63633922c61c92375c9c074a93e85963554f5499fe1450d0e5');

  it('encodes Init as union item 0 of table {features, chain_hash}', () => {
    const bytes = encodeFiberMessage({ type: 'Init', value: { features: DEFAULT_FEATURES, chainHash } });
    expect(hex(bytes)).toBe(
      `00000000` + `31000000` + `0c000000` + `11000000` + `0100000015` + hex(chainHash),
    );
    expect(decodeFiberMessage(bytes)).toEqual({
      type: 'Init',
      value: { features: DEFAULT_FEATURES, chainHash },
    });
  });

  it('keeps kinds without a codec as raw bodies and refuses unknown union items', () => {
    const raw = new Uint8Array([1, 2, 3]);
    const bytes = encodeFiberMessage({ type: 'ChannelReady', raw });
    expect(hex(bytes.subarray(0, 4))).toBe('0a000000');
    expect(decodeFiberMessage(bytes)).toEqual({ type: 'ChannelReady', raw });
    expect(() => decodeFiberMessage(hexToBytes('13000000'))).toThrow(/unknown union item 19/);
    expect(() => decodeFiberMessage(new Uint8Array(3))).toThrow(/shorter/);
    expect(() => decodeFiberMessage(hexToBytes('00000000' + '0c000000'))).toThrow(/Init/);
  });

  it('accepts an Init with extra fields (molecule compatible mode) and names feature bits', () => {
    const extra = hexToBytes(
      '35000000' + '10000000' + '15000000' + '35000000' + '0100000015' + hex(chainHash),
    );
    // total 0x35 = 53: header 16 + features 5 + hash 32 = 53; the third field is empty.
    expect(decodeFiberMessage(new Uint8Array([0, 0, 0, 0, ...extra]))).toMatchObject({ type: 'Init' });
    expect(featureNames(DEFAULT_FEATURES)).toEqual([
      'GOSSIP_QUERIES_REQUIRED',
      'BASIC_MPP_REQUIRED',
      'TRAMPOLINE_ROUTING_REQUIRED',
    ]);
  });
});

describe('multiaddr', () => {
  it('parses TCP and WS addresses with a peer id', () => {
    expect(
      parseDialAddress('/ip4/127.0.0.1/tcp/8228/ws/p2p/QmbvRjJHAQDmj3cgnUBGQ5zVnGxUKwb2qJygwNs2wk41h8'),
    ).toEqual({
      address: '/ip4/127.0.0.1/tcp/8228/ws/p2p/QmbvRjJHAQDmj3cgnUBGQ5zVnGxUKwb2qJygwNs2wk41h8',
      host: '127.0.0.1',
      port: 8228,
      ws: true,
      peerId: 'QmbvRjJHAQDmj3cgnUBGQ5zVnGxUKwb2qJygwNs2wk41h8',
    });
    expect(parseDialAddress('/dns4/localhost/tcp/1')).toMatchObject({ host: 'localhost', ws: false });
  });

  it('refuses what the node cannot dial', () => {
    expect(() => parseDialAddress('/ip4/1.2.3.4/udp/1')).toThrow(/not supported/);
    expect(() => parseDialAddress('/ip4/1.2.3.4/tcp/443/wss')).toThrow(/not supported/);
    expect(() => parseDialAddress('/ip4/1.2.3.4')).toThrow(/not supported/);
    expect(() => parseDialAddress('/ip4/1.2.3.4/tcp/0')).toThrow(/not supported/);
    expect(() => parseDialAddress('/ip4/1.2.3.4/tcp/1/p2p/QmShort')).toThrow('invalid multiaddr');
  });
});
