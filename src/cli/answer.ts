import type { AnswerReport, TasksClient } from '../client/index.js';
import { remoteLine } from '../client/remote-text.js';
import { writeJson } from './json-output.js';
import { ScriptedAnswers } from './prompt-answers.js';
import { terminalPrompt } from './prompt-form.js';
import { CliInput } from './prompt-resolver.js';
import { answerHint, detachOnInterrupt, type RequestorFlags, resumeHint } from './requestor.js';
import { withTaskClient } from './task-commands.js';
import { ExitCode } from './usage-error.js';

/** Options of `mcp-tasks answer`, as commander parses them. */
export interface AnswerFlags extends RequestorFlags {
  /** JSON answers (see {@link ScriptedAnswers}); without them a terminal shows a form for each question. */
  answers?: string;
}

/**
 * `mcp-tasks answer <taskId>`: answer the questions a task is waiting on — from another shell, or after the client
 * that created it went away — from `--answers` or with a form on the terminal, then exit; the task goes on without
 * this command (follow it with `mcp-tasks watch`). Exit 0 when every question was answered (or none was waiting),
 * 6 when some are left open (each is printed with an example `--answers`), 4 unknown task, 5 connection/protocol.
 * @throws UsageError for malformed `--answers` (exit 64).
 */
export async function answerCommand(taskId: string, flags: AnswerFlags): Promise<void> {
  const answers = flags.answers === undefined ? undefined : ScriptedAnswers.parse(flags.answers);
  const prompt = terminalPrompt();
  const interrupt = detachOnInterrupt();
  let current: TasksClient | undefined;
  const input = new CliInput({
    ...(answers ? { answers } : {}),
    ...(prompt ? { prompt } : {}),
    detachOnInput: false,
    answerCommand: (id) => answerHint(current as TasksClient, id),
    stderr: process.stderr,
  });
  try {
    process.exitCode = await withTaskClient(
      'answer',
      taskId,
      flags,
      async (client) => {
        current = client;
        const report = await client.answerTask(taskId, undefined, { signal: interrupt.signal });
        return printReport(report, client, flags);
      },
      input.handler,
    );
  } finally {
    interrupt.dispose();
    prompt?.close();
  }
  if (interrupt.signal.aborted) process.exitCode = ExitCode.interrupted;
}

async function printReport(report: AnswerReport, client: TasksClient, flags: AnswerFlags): Promise<number> {
  const code = report.left.length > 0 ? ExitCode.inputNeeded : ExitCode.completed;
  if (flags.json) {
    const asked = report.asked.map((request) => ({
      key: request.key,
      message: request.params.message,
      ...(request.params.requestedSchema ? { requestedSchema: request.params.requestedSchema } : {}),
    }));
    writeJson({ ...report, asked });
    return code;
  }
  const { taskId } = report;
  if (report.status !== 'input_required') {
    process.stdout.write(`task ${taskId} is ${report.status}; no question is waiting\n`);
    return code;
  }
  if (report.asked.length === 0) {
    process.stdout.write(`task ${taskId} is input_required, but no question reached this client\n`);
    return ExitCode.inputNeeded;
  }
  // A question's key is the server's (a v2 `inputRequests` key, a v1 request id): quoted by the rule, like its message.
  const keys = (list: string[]): string => list.map((key) => remoteLine(key, 200)).join(', ');
  if (report.answered.length > 0) process.stdout.write(`task ${taskId}: answered ${keys(report.answered)}\n`);
  if (report.left.length > 0) process.stdout.write(`task ${taskId}: still waiting for ${keys(report.left)}\n`);
  else process.stderr.write(`mcp-tasks: task ${taskId} goes on; follow it with: ${await resumeHint(client, taskId)}\n`);
  return code;
}
