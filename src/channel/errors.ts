/** A step the channel machine refuses (a peer's message, a command, an event out of place). */
export class ChannelError extends Error {}
