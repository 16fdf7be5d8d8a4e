module herald.invalid/heraldwebhook

go 1.19
