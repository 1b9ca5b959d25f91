import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** One command for one worker of {@link GatedWorkers.run}; see `workers/store-worker.mjs` for the ops. */
export interface GatedCommand {
  op: 'open' | 'attach' | 'cancel' | 'complete' | 'brokenCancel' | 'answer' | 'close';
  args?: Record<string, unknown>;
  /** `first` acts as soon as released; `second` waits until `first` started, then `delayMs`. */
  role?: 'first' | 'second' | 'none';
  delayMs?: number;
}

type Reply = { id: number; type: 'ready' | 'done' | 'error'; value?: unknown; message?: string };

const WORKER_SCRIPT = fileURLToPath(new URL('../workers/store-worker.mjs', import.meta.url));

/**
 * Worker threads that each play one process against a shared SQLite file, released together by a barrier
 * (`Atomics.wait` on a SharedArrayBuffer) so their writes really overlap.
 */
export class GatedWorkers {
  private readonly ctrl = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
  private readonly workers: Worker[];
  private nextId = 0;

  /** @param storeModule `file:` URL of the compiled store (see `compiled-store.ts`). */
  constructor(count: number, storeModule: string) {
    this.workers = Array.from({ length: count }, () => new Worker(WORKER_SCRIPT, { workerData: { ctrl: this.ctrl.buffer, storeModule } }));
  }

  /** Give worker i `commands[i]`, release all at once when every one is waiting, resolve with their results. */
  async run(commands: readonly GatedCommand[]): Promise<unknown[]> {
    Atomics.store(this.ctrl, 0, 0);
    Atomics.store(this.ctrl, 1, 0);
    const ready: Array<Promise<void>> = [];
    const results = commands.map((command, index) => {
      const worker = this.workers[index]!;
      const id = (this.nextId += 1);
      let markReady!: () => void;
      ready.push(new Promise<void>((resolve) => (markReady = resolve)));
      const result = new Promise<unknown>((resolve, reject) => {
        // A crashed worker never reports ready: release the barrier wait too, so the failure surfaces.
        const onError = (error: Error) => {
          markReady();
          reject(error);
        };
        const onMessage = (reply: Reply) => {
          if (reply.id !== id) return;
          if (reply.type === 'ready') return markReady();
          worker.off('message', onMessage);
          worker.off('error', onError);
          if (reply.type === 'done') resolve(reply.value);
          else reject(new Error(`worker ${index} failed: ${reply.message}`));
        };
        worker.on('message', onMessage);
        worker.once('error', onError);
      });
      worker.postMessage({ id, ...command });
      return result;
    });
    await Promise.all(ready);
    Atomics.store(this.ctrl, 0, 1);
    Atomics.notify(this.ctrl, 0);
    return Promise.all(results);
  }

  /** Stop every worker. */
  async terminate(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.terminate()));
  }
}
