import { createInterface, type Interface } from 'node:readline';

import type { ElicitAnswer, InputRequest } from '../client/index.js';
import { remoteLine, remoteLines } from '../client/remote-text.js';
import { describeField, type FieldValue, type FormField, formFields, parseFieldInput } from './prompt-schema.js';

/** The input closed (Ctrl-D, end of a pipe) before the question was answered. */
export class PromptClosedError extends Error {
  override readonly name = 'PromptClosedError';
  constructor() {
    super('input ended before the question was answered');
  }
}

/** What the action prompt accepts (Enter alone accepts). */
const ACTIONS = new Map<string, ElicitAnswer['action']>([
  ['', 'accept'],
  ['a', 'accept'],
  ['accept', 'accept'],
  ['d', 'decline'],
  ['decline', 'decline'],
  ['c', 'cancel'],
  ['cancel', 'cancel'],
]);

/** Control characters of server-provided text must not move the cursor or recolour the terminal. */

/**
 * Interactive forms on a terminal (or any line stream): for each question its message, an accept / decline /
 * cancel choice, then one prompt per field generated from `requestedSchema`, re-asked until the value is valid.
 * One line reader serves the whole command, so lines typed (or piped) ahead are not lost between questions.
 */
export class PromptSession {
  private readonly reader: Interface;
  private readonly lines: string[] = [];
  private waiting: { resolve(line: string): void; reject(error: Error): void } | undefined;
  private closed = false;

  constructor(
    input: NodeJS.ReadableStream,
    private readonly output: NodeJS.WritableStream,
    private readonly terminal: boolean,
  ) {
    this.reader = createInterface({ input, output, terminal });
    this.reader.on('line', (line) => {
      if (this.waiting) this.settle((waiting) => waiting.resolve(line));
      else this.lines.push(line);
    });
    this.reader.on('close', () => {
      this.closed = true;
      this.settle((waiting) => waiting.reject(new PromptClosedError()));
    });
    // In terminal mode readline takes Ctrl-C itself; hand it to the process so the command detaches as usual.
    this.reader.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
  }

  /**
   * Ask one question and return the user's answer.
   * @throws PromptClosedError when the input ends; the signal's reason when aborted (e.g. Ctrl-C).
   */
  async answer(request: InputRequest, signal: AbortSignal): Promise<ElicitAnswer> {
    const where = remoteLine(request.taskId ? `task ${request.taskId}, ${request.key}` : request.key);
    this.output.write(`\n? ${remoteLines(request.params.message, '  ')}\n  (${where})\n`);
    if (request.params.mode === 'url') this.output.write(`  open: ${remoteLine(request.params.url)}\n`);
    const action = await this.askUntil<ElicitAnswer['action']>('  [a]ccept, [d]ecline or [c]ancel? (a) ', signal, (text) => {
      const choice = ACTIONS.get(text.toLowerCase());
      return choice ? { value: choice } : { reason: 'type a, d or c' };
    });
    if (action !== 'accept' || request.params.mode === 'url') return { action };
    const content: Record<string, FieldValue> = {};
    for (const field of formFields(request.params.requestedSchema)) {
      const value = await this.askField(field, signal);
      if (value !== undefined) content[field.name] = value;
    }
    return { action: 'accept', content };
  }

  /** Stop reading (lets the process exit). */
  close(): void {
    this.reader.close();
  }

  private askField(field: FormField, signal: AbortSignal): Promise<FieldValue | undefined> {
    if (field.description) this.output.write(`  ${remoteLines(field.description, '  ')}\n`);
    field.options?.forEach((option, index) =>
      this.output.write(`    ${index + 1}) ${remoteLine(option.title)}${option.title === option.value ? '' : ` [${remoteLine(option.value)}]`}\n`),
    );
    return this.askUntil(`  ${remoteLine(field.label)} (${describeField(field)}): `, signal, (text) => {
      if (text === '') {
        if (field.default !== undefined) return { value: field.default };
        return field.required ? { reason: 'an answer is required' } : { value: undefined };
      }
      return parseFieldInput(field, text);
    });
  }

  /** Prompt until `parse` accepts the trimmed line; each refusal is explained and the prompt repeated. */
  private async askUntil<T>(prompt: string, signal: AbortSignal, parse: (text: string) => { value: T } | { reason: string }): Promise<T> {
    for (;;) {
      const parsed = parse((await this.nextLine(prompt, signal)).trim());
      if ('value' in parsed) return parsed.value;
      this.output.write(`  ✗ ${parsed.reason}\n`);
    }
  }

  private nextLine(prompt: string, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    this.reader.setPrompt(prompt);
    this.reader.prompt();
    const queued = this.lines.shift();
    if (queued !== undefined) {
      if (!this.terminal) this.output.write(`${queued}\n`); // a terminal echoed it already; a pipe did not
      return Promise.resolve(queued);
    }
    if (this.closed) return Promise.reject(new PromptClosedError());
    return new Promise<string>((resolve, reject) => {
      const onAbort = (): void =>
        this.settle((waiting) => waiting.reject(signal.reason instanceof Error ? signal.reason : new DOMException('aborted', 'AbortError')));
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting = {
        resolve: (line) => {
          signal.removeEventListener('abort', onAbort);
          resolve(line);
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
    });
  }

  private settle(action: (waiting: NonNullable<PromptSession['waiting']>) => void): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) action(waiting);
  }
}

/** The interactive form on stdin/stderr when both are terminals (stdout stays for results), else `undefined`. */
export function terminalPrompt(): PromptSession | undefined {
  return process.stdin.isTTY && process.stderr.isTTY ? new PromptSession(process.stdin, process.stderr, true) : undefined;
}
