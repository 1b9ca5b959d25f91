/** Texts of the task page's domain-outcome half that depend on the task alone (no DOM, no imports: unit-tested in Node). */
/**
 * What an empty domain outcome means: a tool that declares domain operations has performed none *yet* (it may be
 * waiting for a confirmation before it deletes or commits anything); only other tools have none to show at all.
 */
export function noOperationsYet(page: { declaresOperations: boolean; task: { status: string; tool: string } }): string {
  if (!page.declaresOperations) return 'This task declared no domain operations: there is no system-of-record outcome to show.';
  const ended = page.task.status === 'completed' || page.task.status === 'failed' || page.task.status === 'cancelled';
  return ended
    ? 'This task performed no domain operations: nothing was changed in a system of record.'
    : `No domain operations yet: ${page.task.tool} may change a system of record${page.task.status === 'input_required' ? ' once its question is answered' : ''}; each operation and its outcome will show here.`;
}
