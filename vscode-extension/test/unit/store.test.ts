// The editor's `flower.store`: what the language server is told, and the password it is not.
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { splitStore } from '../../src/store';

test('the password leaves the URL and travels on its own', () => {
  assert.deepEqual(splitStore('postgresql://flower:s3cr%40t@db.example:5433/runs?sslmode=require'), {
    url: 'postgresql://flower@db.example:5433/runs?sslmode=require',
    password: 's3cr@t',
  });
  assert.deepEqual(splitStore(' postgres://u:p@/flower?host=/run/pg '), {
    url: 'postgres://u@/flower?host=/run/pg',
    password: 'p',
  });
});

test('a URL without a password is sent as it is', () => {
  assert.deepEqual(splitStore('postgresql://flower@db/runs'), { url: 'postgresql://flower@db/runs' });
  assert.deepEqual(splitStore('postgresql:///runs'), { url: 'postgresql:///runs' });
  assert.deepEqual(splitStore('postgresql://db:5432/runs'), { url: 'postgresql://db:5432/runs' });
});

test('an empty setting means no shared store; anything else is the server to judge', () => {
  assert.equal(splitStore(''), undefined);
  assert.equal(splitStore('   '), undefined);
  assert.equal(splitStore(undefined), undefined);
  assert.deepEqual(splitStore('mysql://a:b@c/d'), { url: 'mysql://a:b@c/d' });
});
