import type { ElicitAnswer, InputHandler, InputRequest } from '../client/index.js';
import { remoteLine, remoteLines } from '../client/remote-text.js';
import { shellWord } from '../client/shell-word.js';
import type { ScriptedAnswers } from './prompt-answers.js';
import { PromptClosedError, type PromptSession } from './prompt-form.js';
import { describeField, exampleContent, formFields } from './prompt-schema.js';

/** Thrown by the CLI's input handler under `--detach-on-input` for a task question nobody answers here. */
export class InputLeftOpenError extends Error {
  override readonly name = 'InputLeftOpenError';
  constructor(readonly request: InputRequest) {
    super(`task ${request.taskId ?? ''} waits for input (${request.key})`);
  }
}

/** Something that shows live status and must step aside while a form is on screen. */
export interface Suspendable {
  /** Stop drawing; the returned function resumes. */
  suspend(): () => void;
}

/** Options of {@link CliInput}. */
export interface CliInputOptions {
  /** `--answers`, when given. */
  answers?: ScriptedAnswers;
  /** The interactive form, when stdin and stderr are terminals. */
  prompt?: PromptSession;
  /** `--detach-on-input`: stop at a task question nobody answers here instead of waiting for `mcp-tasks answer`. */
  detachOnInput: boolean;
  /** The command that answers a task's questions later (e.g. `mcp-tasks answer <id>`). */
  answerCommand(taskId: string): Promise<string>;
  stderr: NodeJS.WritableStream;
}

/** The fields of a question, one `  name: what it takes` line each (empty for a form without fields). */
export function describeQuestion(request: InputRequest): string {
  return formFields(request.params.requestedSchema)
    .map((field) => `  ${remoteLine(field.name, 200)}: ${describeField(field)}\n`)
    .join('');
}

/** An `--answers` value that would answer this question. */
export function exampleAnswers(request: InputRequest): string {
  return shellWord(JSON.stringify(exampleContent(formFields(request.params.requestedSchema))));
}

/**
 * The CLI's answer to a question: from `--answers` if it covers the question, else from the interactive form, else
 * left open — with a notice on stderr saying what is asked and how to answer it from another shell (and, under
 * `--detach-on-input`, by ending the command).
 */
export class CliInput {
  private asked = 0;
  private status: Suspendable | undefined;
  private prompt: PromptSession | undefined;

  constructor(private readonly options: CliInputOptions) {
    this.prompt = options.prompt;
  }

  /** The status display to suspend while a form is shown. */
  attachStatus(status: Suspendable): void {
    this.status = status;
  }

  /** The {@link InputHandler} to connect with. */
  readonly handler: InputHandler = async (request, context) => {
    const index = this.asked++;
    const { stderr } = this.options;
    const scripted = this.options.answers?.answerFor(request, index);
    if (scripted && 'answer' in scripted) {
      stderr.write(`mcp-tasks: answered ${remoteLine(request.key, 200)} (${scripted.answer.action}) from --answers\n`);
      return scripted.answer;
    }
    if (scripted)
      stderr.write(
        `mcp-tasks: --answers does not fit ${remoteLine(request.key, 200)} ("${remoteLine(request.params.message)}"): ${remoteLine(scripted.problems.join('; '))}\n`,
      );
    else {
      // Given but silent for this question (a misspelt field, a short array): say so, or exit 6 looks unexplained.
      const miss = this.options.answers?.missReason(request, index);
      if (miss) stderr.write(`mcp-tasks: --answers does not cover ${remoteLine(request.key, 200)}: ${remoteLine(miss, 400)}\n`);
    }
    if (this.prompt) {
      const answer = await this.ask(this.prompt, request, context.signal);
      if (answer) return answer;
    }
    if (request.taskId === undefined) return undefined; // asked before a task exists: the call reports it
    stderr.write(
      `mcp-tasks: task ${remoteLine(request.taskId, 200)} needs input (${remoteLine(request.key, 200)}): ${remoteLines(request.params.message, '  ')}\n${describeQuestion(request)}` +
        `  answer it with: ${await this.options.answerCommand(request.taskId)} --answers ${exampleAnswers(request)}\n`,
    );
    if (this.options.detachOnInput) throw new InputLeftOpenError(request);
    return undefined;
  };

  /** The form's answer; `undefined` once the terminal input has ended (later questions are then left open). */
  private async ask(prompt: PromptSession, request: InputRequest, signal: AbortSignal): Promise<ElicitAnswer | undefined> {
    const resume = this.status?.suspend();
    try {
      return await prompt.answer(request, signal);
    } catch (error) {
      if (!(error instanceof PromptClosedError)) throw error;
      this.prompt = undefined;
      return undefined;
    } finally {
      resume?.();
    }
  }
}
