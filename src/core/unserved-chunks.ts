import type { Logger } from './logger.js';
import type { TaskResults } from './ports/results.js';

/**
 * Delete the chunks of a large result that nothing will serve (`TaskResults.discardUnservedResultChunks`): its
 * outcome lost to a cancel (the run's, or a cancel of a task whose run died after storing them), or its write failed
 * and the task failed with `result_not_stored`, or its run died before the outcome and recovery failed the task. They
 * would stay until the task is deleted, its TTL later. Best effort: a failure is logged (on `logger`, which names the
 * task); what called it is over either way.
 */
export async function discardUnservedChunks(store: Pick<TaskResults, 'discardUnservedResultChunks'>, taskId: string, logger: Logger): Promise<void> {
  try {
    const chunks = await store.discardUnservedResultChunks(taskId);
    if (chunks > 0) logger.info({ chunks }, 'the large result chunks nothing will serve were deleted');
  } catch (error) {
    logger.warn({ err: error }, 'could not delete large result chunks nothing will serve; they go with the task');
  }
}
