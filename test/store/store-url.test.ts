import { describe, expect, it } from 'vitest';
import { parseStoreUrl, redactStoreUrl } from '../../src/store/store-url.js';

describe('parseStoreUrl', () => {
  it.each([
    'redis://localhost:6379',
    'redis://redis.internal',
    'redis://:s3cret@10.0.0.5:6380/2',
    'redis://gatehouse:s%40cret@redis.internal:6379/0',
    'rediss://gatehouse:s3cret@redis.example.com:6380',
    'redis://[::1]:6379',
  ])('reads %s as a standalone Redis, handing the URL to ioredis as it is', (url) => {
    expect(parseStoreUrl(url)).toStrictEqual({ mode: 'standalone', url });
  });

  it('reads a sentinel URL: sentinels, master name, password and db', () => {
    const url = 'redis-sentinel://:p%40ss%2Fword@s1.internal:26379,s2.internal:26380,[fd00::3]:26381/mymaster?db=3';
    expect(parseStoreUrl(url)).toStrictEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1.internal', port: 26379 },
        { host: 's2.internal', port: 26380 },
        { host: 'fd00::3', port: 26381 },
      ],
      name: 'mymaster',
      password: 'p@ss/word',
      db: 3,
    });
  });

  it('reads a sentinel URL without credentials or db, defaulting the sentinel port', () => {
    expect(parseStoreUrl('redis-sentinel://s1,s2:5000/cache')).toStrictEqual({
      mode: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 5000 },
      ],
      name: 'cache',
    });
  });

  it('reads a user name (Redis ACL) in a sentinel URL', () => {
    expect(parseStoreUrl('redis-sentinel://gatehouse:pw@s1:26379/m')).toMatchObject({ username: 'gatehouse', password: 'pw' });
  });

  it('reads a cluster URL: nodes and password', () => {
    expect(parseStoreUrl('redis-cluster://:s3cret@n1.internal:7000,n2.internal:7001,10.0.0.9')).toStrictEqual({
      mode: 'cluster',
      nodes: [
        { host: 'n1.internal', port: 7000 },
        { host: 'n2.internal', port: 7001 },
        { host: '10.0.0.9', port: 6379 },
      ],
      password: 's3cret',
    });
  });

  it.each([
    ['tls=true', true],
    ['tls=1', true],
    ['tls=false', false],
  ])('reads ?%s of a cluster URL', (query, tls) => {
    expect(parseStoreUrl(`redis-cluster://n1:7000/?${query}`)).toStrictEqual({
      mode: 'cluster',
      nodes: [{ host: 'n1', port: 7000 }],
      tls,
    });
  });

  it.each([
    ['', /scheme/],
    ['localhost:6379', /scheme/],
    ['http://localhost:6379', /scheme/],
    ['redis://', /not a valid URL|host/],
    ['redis://localhost:notaport', /not a valid URL/],
    ['redis://localhost:6379/cache', /database number/],
    ['redis://:%zz@localhost:6379', /percent-encoding/],
    ['redis-sentinel://s1:26379', /master name/],
    ['redis-sentinel://s1:26379/', /master name/],
    ['redis-sentinel://s1:26379/a/b', /master name/],
    ['redis-sentinel:///mymaster', /host:port/],
    ['redis-sentinel://s1:26379/m?db=x', /db must be a database number/],
    ['redis-sentinel://s1:26379/m?timeout=5', /unknown parameter "timeout"/],
    ['redis-sentinel://:%E0%A4%A@s1:26379/m', /percent-encoding/],
    ['redis-cluster://', /host:port/],
    ['redis-cluster://n1:7000,,n2:7001', /"" is not a host:port/],
    ['redis-cluster://n1:99999', /is not a host:port/],
    ['redis-cluster://n1:0', /is not a host:port/],
    ['redis-cluster://n1:7000:7001', /is not a host:port/],
    ['redis-cluster://n1:7000/db', /no path/],
    ['redis-cluster://n1:7000?tls=maybe', /tls must be true or false/],
  ])('rejects %j with a clear error', (url, problem) => {
    expect(() => parseStoreUrl(url)).toThrow(/^invalid store URL/);
    expect(() => parseStoreUrl(url)).toThrow(problem);
  });

  it('never puts the password into its error message', () => {
    for (const url of ['redis-cluster://:hunter2@n1:99999', 'redis://:hunter2@host:port', 'redis://:hun/ter2@host:1']) {
      let message = '';
      try {
        parseStoreUrl(url);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/^invalid store URL/);
      expect(message).not.toContain('hunter2');
      expect(message).not.toContain('ter2');
    }
  });
});

describe('redactStoreUrl', () => {
  it.each([
    ['redis://localhost:6379', 'redis://localhost:6379'],
    ['redis://:pw@localhost:6379/1', 'redis://:***@localhost:6379/1'],
    ['rediss://user:pw@host:6380', 'rediss://user:***@host:6380'],
    ['redis://lonelysecret@host', 'redis://***@host'],
    [':pw@host:6379', ':***@host:6379'],
    ['redis-sentinel://:p@ss/w@s1:1,s2:2/m?db=1', 'redis-sentinel://:***@s1:1,s2:2/m?db=1'],
  ])('masks %s as %s', (url, redacted) => {
    expect(redactStoreUrl(url)).toBe(redacted);
  });
});
