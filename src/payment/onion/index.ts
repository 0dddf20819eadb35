/** The payment onion: what the payment and channel layers use. */
export * from './hop-data.ts';
export * from './packet.ts';
export * from './route-hops.ts';
export { SphinxError } from './sphinx.ts';
export * from './tlc-error.ts';
export * from './trampoline.ts';
