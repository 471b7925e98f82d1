module pushworker/peers/go-h2-sender

go 1.19
