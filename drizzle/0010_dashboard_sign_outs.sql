CREATE TABLE "akadze"."dashboard_sign_outs" (
	"session" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
