import { describe, expect, it } from 'vitest';
import { ownPluginPath } from '../../src/domain/workflow/own-plugin-url.js';

describe('ownPluginPath', () => {
  it.each([
    ['/api/plugins/TFSwitch/index', '/api/plugins/TFSwitch/index'],
    ['/api/plugins/TFSwitch', '/api/plugins/TFSwitch'],
    ['/api/plugins/textEditor/v2/index?x=1&y=2', '/api/plugins/textEditor/v2/index?x=1&y=2'],
    ['/api/plugins/customFeedback/v2/index#frag', '/api/plugins/customFeedback/v2/index'],
  ])('%s is this service', (url, expected) => {
    expect(ownPluginPath(url)).toBe(expected);
  });

  it.each([
    'http://127.0.0.1:3000/api/plugins/TFSwitch/index',
    'https://example.com/api/plugins/TFSwitch/index',
    '//evil.example/api/plugins/TFSwitch/index',
    '/\\evil.example/api/plugins/TFSwitch/index',
    '/api/core/app/list',
    '/api/plugins/../core/app/list',
    '/api/plugins/%2e%2e/core/app/list',
    '/api/plugins/TFSwitch%2F..%2F..%2Fcore',
    '/api/plugins/',
    '/api/pluginsX/TFSwitch',
    'api/plugins/TFSwitch/index',
    '',
  ])('%s is not', (url) => {
    expect(ownPluginPath(url)).toBeNull();
  });
});
