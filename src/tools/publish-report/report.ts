import type { JsonValue } from '../../core/task.js';

/**
 * The Markdown report of another task's result (as the task service resolved it for `fromTask`): its text content,
 * then its `structuredContent` as a JSON block.
 * @throws Error when the resolved value is missing (the service resolves it before every run).
 */
export function reportFromResult(taskId: string, resolved: JsonValue | undefined): string {
  if (typeof resolved !== 'object' || resolved === null || Array.isArray(resolved)) throw new Error(`fromTask ${taskId} was not resolved before the run`);
  const result = resolved.result as { content?: Array<{ type?: string; text?: string }>; structuredContent?: JsonValue } | undefined;
  const text = (result?.content ?? []).filter((block) => block.type === 'text' && typeof block.text === 'string').map((block) => block.text as string);
  const lines = [`# Report of task ${taskId} (${String(resolved.toolName)})`, '', ...text];
  if (result?.structuredContent !== undefined) lines.push('', '```json', JSON.stringify(result.structuredContent, null, 2), '```');
  return `${lines.join('\n')}\n`;
}
