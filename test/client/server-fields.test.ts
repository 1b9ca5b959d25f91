import { describe, expect, it } from 'vitest';

import { TASK_ID_MAX_CHARS, taskIdProblem } from '../../src/client/server-fields.js';

describe('taskIdProblem: the task ids this client prints as they are', () => {
  it('accepts the ids real servers make, and printable ids with shell metacharacters (quoted where suggested)', () => {
    const ids = [
      '3f2b8c1e-7a4d-4e8f-9b6a-1c2d3e4f5a6b', // UUID
      '4f0c9b1e2d7a', // hex
      'Zm9v_YmFy-YmF6cXV4MTIzNA', // base64url
      '-1ERHb2xkX2lkX2Zvcm0xYQ', // one of ours from before ids began with a letter or digit
      'tsk_4f0c9b1e2d7a',
      'urn:task:1234', // a colon after a word that is not a role
      't;echo${IFS}pwned|cat',
      'x'.repeat(TASK_ID_MAX_CHARS),
    ];
    for (const id of ids) expect(taskIdProblem(id), id).toBeUndefined();
  });

  it('refuses an empty or overlong id, a space, a control, a non-ASCII character and a role marker', () => {
    expect(taskIdProblem('')).toBe('is empty');
    expect(taskIdProblem('x'.repeat(TASK_ID_MAX_CHARS + 1))).toMatch(/is 257 characters long/);
    for (const id of ['a b', 'a\tb', 'a\nb', 't\u001b[2J', 'a\u007f', 'caf\u00e9', 'a\u2028b', 'a\u009b31m', 'ｔａｓｋ'])
      expect(taskIdProblem(id), JSON.stringify(id)).toBe('is not printable ASCII without spaces');
    for (const id of ['SYSTEM:rm', 'x<|im_start|>', '<system>', '[INST]', 'urn:user:1']) expect(taskIdProblem(id), id).toBe('contains a role marker');
  });
});
