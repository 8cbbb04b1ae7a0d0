import type { FastifyInstance } from 'fastify';
import type { Config } from '../core/config.ts';

/**
 * Where links handed out start (mail, checkout pages, the status feed): PUBLIC_URL, else the address this
 * server listens on. Never the request's Host or X-Forwarded-* headers: whoever sends the request chooses
 * those, and a reset link pointing at their host would hand them the victim's token.
 */
export function linkOrigin(app: FastifyInstance, config: Config): string {
  return config.publicUrl?.replace(/\/+$/, '') ?? listenOrigin(app);
}

/** `http://host:port` of the listening socket; a wildcard listener (0.0.0.0, ::) is `localhost`. */
export function listenOrigin(app: FastifyInstance): string {
  const bound = app.server.address();
  if (bound === null || typeof bound === 'string') return 'http://localhost';
  const host = bound.address === '0.0.0.0' || bound.address === '::' ? 'localhost' : bound.address;
  return `http://${bound.family === 'IPv6' && host !== 'localhost' ? `[${host}]` : host}:${bound.port}`;
}
