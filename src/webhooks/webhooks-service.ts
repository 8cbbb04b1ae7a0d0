import { randomBytes } from 'node:crypto';
import type { Config } from '../core/config.ts';
import { GatewayError } from '../core/gateway-error.ts';
import { type Clock, newId } from '../core/ids.ts';
import type { WebhookDelivery, WebhookEndpoint } from '../core/records.ts';
import type { Store } from '../store/store.ts';
import type { WebhookEventSummary } from '../store/webhooks-repo.ts';
import { queueEvent } from './queue-event.ts';
import type { SendThrottle } from './send-throttle.ts';
import { checkWebhookUrl, type Resolve } from './url-guard.ts';

/** Deliveries and events an account's log shows, newest first. */
const DELIVERIES_SHOWN = 100;
const EVENTS_SHOWN = 50;

/**
 * A signing secret as Standard Webhooks serializes one: `whsec_` and 24 random bytes in standard base64, so
 * that its libraries, which decode it strictly, take it as it is.
 */
const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

export interface WebhooksOptions {
  store: Store;
  config: Config;
  clock: Clock;
  /** Called after an event is queued, so delivery starts at once. */
  onEventQueued(): void;
  /** Bounds the test events and redeliveries an account asks for. */
  throttle: SendThrottle;
  /** How host names are resolved when an endpoint is saved (DNS by default). */
  resolve?: Resolve;
}

/** An account's webhook endpoint and signing secret, test events, the delivery and event logs, redelivery. */
export class WebhooksService {
  readonly #o: WebhooksOptions;

  constructor(options: WebhooksOptions) {
    this.#o = options;
  }

  /**
   * Sets the account's endpoint after the address passes the SSRF guard (400 naming why not); an endpoint
   * that existed keeps its secret and creation time.
   */
  async setEndpoint(accountId: string, rawUrl: string): Promise<{ url: string; secret: string }> {
    const { store, config, clock } = this.#o;
    const url = (
      await checkWebhookUrl(rawUrl, config.webhookAllowPrivate, config.security.webhookPorts, this.#o.resolve)
    ).toString();
    const existing = await store.webhooks.endpoint(accountId);
    const secret = existing?.secret ?? newSecret();
    await store.webhooks.putEndpoint({ accountId, url, secret, createdAt: existing?.createdAt ?? clock() });
    return { url, secret };
  }

  /** The account's endpoint; 404 when none is set. */
  async endpoint(accountId: string): Promise<WebhookEndpoint> {
    const endpoint = await this.#o.store.webhooks.endpoint(accountId);
    if (!endpoint) throw new GatewayError('not_found', 'no webhook endpoint is set');
    return endpoint;
  }

  /** Removes the account's endpoint; 404 when none is set. */
  async deleteEndpoint(accountId: string): Promise<void> {
    if (!(await this.#o.store.webhooks.deleteEndpoint(accountId)))
      throw new GatewayError('not_found', 'no webhook endpoint is set');
  }

  /** Gives the endpoint a new signing secret; the old one signs nothing more. 404 when none is set. */
  async rotateSecret(accountId: string): Promise<{ url: string; secret: string }> {
    const endpoint = await this.endpoint(accountId);
    const secret = newSecret();
    await this.#o.store.webhooks.putEndpoint({ ...endpoint, secret });
    return { url: endpoint.url, secret };
  }

  /**
   * Queues a `webhook.test` event to the account's endpoint (400 without one, 429 past the throttle); resolves
   * to its id. It is retried as every event is, so that a receiver's handling of retries can be tried too.
   */
  async sendTest(accountId: string): Promise<string> {
    const { store, clock } = this.#o;
    if (!(await store.webhooks.endpoint(accountId)))
      throw new GatewayError('invalid_request', 'set a webhook endpoint first');
    await this.#o.throttle.check(accountId, 'test');
    const now = clock();
    const id = newId('evt');
    await queueEvent(store.webhooks, {
      id,
      accountId,
      eventType: 'webhook.test',
      body: { event_type: 'webhook.test', event_id: id, timestamp: new Date(now).toISOString() },
      now,
    });
    this.#o.onEventQueued();
    return id;
  }

  /** The account's latest delivery attempts. */
  async deliveries(accountId: string): Promise<WebhookDelivery[]> {
    return this.#o.store.webhooks.deliveriesOf(accountId, DELIVERIES_SHOWN);
  }

  /** The account's latest events and where each stands. */
  async events(accountId: string): Promise<WebhookEventSummary[]> {
    return this.#o.store.webhooks.eventsOf(accountId, EVENTS_SHOWN);
  }

  /** Queues the event of one of the account's deliveries again, due now (404 for another's); its id. */
  async redeliver(accountId: string, deliveryId: string): Promise<string> {
    const { store, clock } = this.#o;
    const delivery = await store.webhooks.delivery(accountId, deliveryId);
    if (!delivery) throw new GatewayError('not_found', `no delivery ${deliveryId}`);
    await this.#o.throttle.check(accountId, 'redeliver');
    await store.webhooks.requeue(delivery.eventId, clock());
    this.#o.onEventQueued();
    return delivery.eventId;
  }
}
