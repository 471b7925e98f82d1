import CCurl

extension CurlTransfer {
    /// Sets (or clears) the request's TLS client certificate on the handle when it differs
    /// from what the previous request on this handle used. `CURL_BLOB_COPY`: libcurl copies the
    /// bytes at `curl_easy_setopt`, so nothing of ours must outlive the call; connections keep
    /// their own copy of the certificate (vtls `Curl_clone_primary_ssl_config`).
    func applyClientCertificate(_ certificate: ClientCertificate?) throws(HTTPTransportError) {
        guard certificate?.id != clientCertificateID else { return }
        if let certificate {
            try setBlob(CURLOPT_SSLCERT_BLOB, certificate.certificatePEM)
            try setText(CURLOPT_SSLCERTTYPE, "PEM")
            try setBlob(CURLOPT_SSLKEY_BLOB, certificate.privateKeyPEM)
            try setText(CURLOPT_SSLKEYTYPE, "PEM")
        } else {
            // A NULL blob clears the option (lib/setopt.c, Curl_setblobopt).
            try check(pw_curl_easy_setopt_blob(handle, CURLOPT_SSLCERT_BLOB, nil), CURLOPT_SSLCERT_BLOB)
            try check(pw_curl_easy_setopt_blob(handle, CURLOPT_SSLKEY_BLOB, nil), CURLOPT_SSLKEY_BLOB)
        }
        clientCertificateID = certificate?.id
    }

    private func setBlob(_ option: CURLoption, _ bytes: [UInt8]) throws(HTTPTransportError) {
        let code = bytes.withUnsafeBytes { raw -> CURLcode in
            var blob = curl_blob(data: UnsafeMutableRawPointer(mutating: raw.baseAddress), len: raw.count, flags: UInt32(CURL_BLOB_COPY))
            return pw_curl_easy_setopt_blob(handle, option, &blob)
        }
        try check(code, option)
    }

    private func setText(_ option: CURLoption, _ value: String) throws(HTTPTransportError) {
        try check(pw_curl_easy_setopt_str(handle, option, value), option)
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws(HTTPTransportError) {
        guard code == CURLE_OK else {
            throw CurlErrorMapping.setupError(code: code, message: "option \(option.rawValue): \(String(cString: curl_easy_strerror(code)))")
        }
    }
}

extension CurlMulti {
    /// Raises the per-host and total connection limits for `identities` client certificates
    /// in use: `perHost` more connections per host each (libcurl counts every TLS identity's
    /// connections against one destination limit). I/O thread only.
    func raiseLimits(identities: Int, perHost: Int, total: Int) {
        let host = perHost * (1 + identities)
        let all = total + perHost * identities
        _ = pw_curl_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, host)
        _ = pw_curl_multi_setopt_long(handle, CURLMOPT_MAX_TOTAL_CONNECTIONS, all)
        _ = pw_curl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, all)
    }
}
