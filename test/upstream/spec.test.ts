import { describe, expect, it } from 'vitest';

import { describeUpstream, listedToolName, parseUpstreamSpec, splitCommand } from '../../src/upstream/spec.js';

describe('--upstream <spec> (issue 28)', () => {
  it('a stdio spec is a name and a command split into words without any shell expansion', () => {
    expect(parseUpstreamSpec('everything=stdio:npx -y @modelcontextprotocol/server-everything stdio')).toEqual({
      name: 'everything',
      transport: 'stdio',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-everything', 'stdio'],
    });
    expect(parseUpstreamSpec(`fs=stdio:node '/opt/my server/index.js' "a b" $HOME *.txt`)).toMatchObject({
      command: 'node',
      args: ['/opt/my server/index.js', 'a b', '$HOME', '*.txt'],
    });
  });

  it('an http(s) spec is a name and a URL', () => {
    expect(parseUpstreamSpec('docs=https://mcp.example.com/mcp')).toEqual({ name: 'docs', transport: 'http', url: 'https://mcp.example.com/mcp' });
    expect(parseUpstreamSpec('local=http://127.0.0.1:3001/mcp?x=1')).toMatchObject({ transport: 'http', url: 'http://127.0.0.1:3001/mcp?x=1' });
  });

  it.each([
    ['stdio:npx server', /^--upstream stdio:…: give the upstream a name first, <name>=stdio:…/],
    ['stdio:node server.js --port=3', /^--upstream stdio:…: give the upstream a name first/],
    ['Everything=stdio:npx server', /^--upstream Everything=stdio:…: the name "Everything" has uppercase letters; use "everything" /],
    ['my_server=stdio:npx server', /^--upstream my_server=stdio:…: the name "my_server" may hold only lowercase letters, digits and - \(no "_"/],
    [`${'a'.repeat(33)}=stdio:x`, /: the name is longer than 32 characters/],
    ['=stdio:x', /: the name before "=" is empty/],
    ['-x=stdio:x', /: the name "-x" starts with -/],
    ['x=stdio:', /stdio: needs a command/],
    ['x=stdio:   ', /stdio: needs a command/],
    ['x=ftp://host/mcp', /give stdio:<command …> or an http\(s\):\/\/ URL/],
    ['x=stdio:node "unterminated', /unterminated double quote/],
  ])('%s is refused: %s', (text, message) => {
    expect(() => parseUpstreamSpec(text)).toThrow(message);
  });

  it('a bad spec is refused without echoing its target (a URL may carry credentials, a command line secrets)', () => {
    for (const text of [
      'Bad Name=https://user:hunter2-secret@host/mcp',
      'https://user:hunter2-secret@host/mcp?a=b',
      'X=stdio:tool --token=hunter2-secret',
      'x=ftp://user:hunter2-secret@host/mcp',
      'x=stdio:tool --token "hunter2-secret',
    ]) {
      let message = '';
      try {
        parseUpstreamSpec(text);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^--upstream /);
      expect(message).not.toContain('hunter2');
    }
  });

  it('a URL with credentials is refused without echoing them', () => {
    let message = '';
    try {
      parseUpstreamSpec('x=https://user:hunter2-secret@host/mcp');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/a URL with a user or password is refused/);
    expect(message).not.toContain('hunter2');
  });

  it('splits like a POSIX shell: quotes, escapes and empty quoted words', () => {
    expect(splitCommand(`a 'b c' "d \\"e\\" \\\\" f\\ g '' h`)).toEqual(['a', 'b c', 'd "e" \\', 'f g', '', 'h']);
    expect(splitCommand('  spaced\tout  ')).toEqual(['spaced', 'out']);
    expect(() => splitCommand("it's")).toThrow(/unterminated single quote/);
  });

  it('SEP-986: a listed name is <upstream>_<tool> when it is a valid tool name, else the tool is left out', () => {
    expect(listedToolName('everything', 'get-sum')).toBe('everything_get-sum');
    expect(listedToolName('fs', 'read.file')).toBe('fs_read.file');
    expect(listedToolName('fs', 'read file')).toBeUndefined();
    expect(listedToolName('fs', 'x'.repeat(126))).toBeUndefined();
    expect(listedToolName('fs', 'x'.repeat(125))).toHaveLength(128);
  });

  it('is described without secret-looking arguments or URL queries', () => {
    const token = 'ghp_0123456789abcdefghijklmnopqrstuvwxyz';
    expect(describeUpstream(parseUpstreamSpec(`gh=stdio:server --token ${token}`))).not.toContain(token);
    expect(describeUpstream(parseUpstreamSpec('d=https://host.example/mcp?key=abc'))).toBe('d (https://host.example/mcp)');
  });
});

describe('--upstream errors never echo a credential, also when the "=" after the name is forgotten (issue 28)', () => {
  const refused = (spec: string): string => {
    try {
      parseUpstreamSpec(spec);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error(`accepted: ${spec}`);
  };

  it.each([
    ['a forgotten "=" after the name, a token before a later --flag=value', 'gh stdio:gh-mcp -t ghp_SECRET99 --all=1', 'ghp_SECRET99'],
    ['":" instead of "=" before a URL with user:password and a query', 'docs:https://alice:hunter2@mcp.example.com/mcp?x=1', 'hunter2'],
    ['a ws:// URL with user:password and a query', 'ws://bob:pa55word@host/mcp?a=b', 'pa55word'],
  ])('%s', (_what, spec, secret) => {
    const message = refused(spec);
    expect(message).not.toContain(secret);
    expect(message).toMatch(/the text before the first "=" is not a name/);
  });
});
