CREATE TABLE "akadze"."debounce_windows" (
	"task" text NOT NULL,
	"key" text NOT NULL,
	"quiet_at" timestamp with time zone NOT NULL,
	"enqueues" integer NOT NULL,
	CONSTRAINT "debounce_windows_task_key_pk" PRIMARY KEY("task","key")
);
--> statement-breakpoint
CREATE TABLE "akadze"."sent_events" (
	"name" text NOT NULL,
	"id" text NOT NULL,
	"sent_at" timestamp with time zone NOT NULL,
	CONSTRAINT "sent_events_name_id_pk" PRIMARY KEY("name","id")
);
--> statement-breakpoint
CREATE INDEX "debounce_windows_quiet_at_idx" ON "akadze"."debounce_windows" USING btree ("quiet_at");--> statement-breakpoint
CREATE INDEX "sent_events_sent_at_idx" ON "akadze"."sent_events" USING btree ("sent_at");