import { describe, expect, it } from 'vitest';
import { OWN_FILE_READ_PATH, OWN_PLUGIN_PATH, ownServicePath } from '../../src/domain/workflow/own-service-url.js';

describe('ownServicePath for plugin URLs', () => {
  it.each([
    ['/api/plugins/TFSwitch/index', '/api/plugins/TFSwitch/index'],
    ['/api/plugins/TFSwitch', '/api/plugins/TFSwitch'],
    ['/api/plugins/textEditor/v2/index?x=1&y=2', '/api/plugins/textEditor/v2/index?x=1&y=2'],
    ['/api/plugins/customFeedback/v2/index#frag', '/api/plugins/customFeedback/v2/index'],
  ])('%s is this service', (url, expected) => {
    expect(ownServicePath(url, OWN_PLUGIN_PATH)).toBe(expected);
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
    '/api/common/file/read?token=x',
    'api/plugins/TFSwitch/index',
    '',
  ])('%s is not', (url) => {
    expect(ownServicePath(url, OWN_PLUGIN_PATH)).toBeNull();
  });
});

describe('ownServicePath for file links', () => {
  it('reads the signed link of an upload, nothing else', () => {
    expect(ownServicePath('/api/common/file/read?filename=a.txt&token=abc', OWN_FILE_READ_PATH)).toBe('/api/common/file/read?filename=a.txt&token=abc');
    expect(ownServicePath('/api/common/file/read/../upload?token=abc', OWN_FILE_READ_PATH)).toBeNull();
    expect(ownServicePath('/api/plugins/TFSwitch/index', OWN_FILE_READ_PATH)).toBeNull();
    expect(ownServicePath('https://files.example/api/common/file/read?token=abc', OWN_FILE_READ_PATH)).toBeNull();
  });
});
