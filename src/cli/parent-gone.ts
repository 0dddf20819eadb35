/**
 * A process started by a devnet (`devnet/supervisor.ts`) has a channel to it: when the devnet
 * process ends however it ends (a SIGKILL, a crash, a benchmark interrupted), the channel closes
 * and `stop` runs, as on SIGTERM. Without it a child that writes nothing (the dev chain, mining
 * every 200 ms) never learned its parent was gone and ran on, a load on every later run. The
 * channel does not keep the process alive; a process started otherwise has none.
 */
export function onParentGone(stop: () => void): void {
  if (!process.channel) return;
  process.channel.unref();
  process.once('disconnect', stop);
}
