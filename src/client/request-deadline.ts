import { AsyncLocalStorage } from 'node:async_hooks';

import type { FetchLike } from '@modelcontextprotocol/client';

/**
 * The deadline of a wait, carried to the HTTP layer (see {@link pollUntilTerminal}'s promise that no request is sent
 * at or after it). The wait checks its deadline before each poll, but a poll passes through several asynchronous
 * steps (session, SDK client, transport) before `fetch` is called, and a busy process can cross the deadline in
 * between; the check that makes the promise true is the last synchronous one, right before `fetch`.
 */
const deadlines = new AsyncLocalStorage<number>();

/** Run `request` with `deadline` (epoch ms; `undefined` = none) in force for every fetch it makes. */
export function withRequestDeadline<T>(deadline: number | undefined, request: () => Promise<T>): Promise<T> {
  return deadline === undefined ? request() : deadlines.run(deadline, request);
}

/**
 * `inner`, refusing to send once the deadline in force has come: it rejects with an `AbortError` (a `DOMException`,
 * as an aborted `fetch` does) without calling `inner`, so the request never leaves.
 */
export function deadlineFetch(inner: FetchLike): FetchLike {
  return (url, init) => {
    const deadline = deadlines.getStore();
    if (deadline !== undefined && Date.now() >= deadline) {
      return Promise.reject(new DOMException('the wait reached its deadline before this request was sent', 'AbortError'));
    }
    return inner(url, init);
  };
}
