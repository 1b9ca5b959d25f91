// Preloaded into every measured server process (`node --expose-gc --import bench/lib/probe.mjs …`). It answers the
// driver's IPC questions about this process's own CPU time, memory and event-loop delay, so no server needs an
// admin endpoint and the figures come from the process's own accounting (`process.cpuUsage()`), not from the
// machine's load.
import { monitorEventLoopDelay } from 'node:perf_hooks';

import { settledMemory } from './load.mjs';

if (process.send) {
  // How late a 10 ms timer fires: the time the event loop was blocked (synchronous work, fsync, GC).
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  process.on('message', (message) => {
    if (message?.probe === undefined) return;
    const answer = async () => {
      const memory = message.probe === 'gc' ? await settledMemory() : process.memoryUsage();
      const loop = { p50Ms: loopDelay.percentile(50) / 1e6, p99Ms: loopDelay.percentile(99) / 1e6, maxMs: loopDelay.max / 1e6 };
      if (message.resetLoopDelay) loopDelay.reset();
      process.send({ probeId: message.probeId, cpu: process.cpuUsage(), memory, loop });
    };
    void answer();
  });
  // The channel must not keep a server alive on its own: its lifetime stays what the server decides.
  process.channel?.unref();
}
