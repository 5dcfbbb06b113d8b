// The events module's door: the event pipeline (outbox relay + fulfillment consumer) a process
// starts, and the event side of the HTTP API.
export { startEventPipeline, type EventPipeline } from './pipeline.ts';
export { eventsRoutes } from './routes.ts';
