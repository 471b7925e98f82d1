/// External vectors made with the `openssl` 3.0 CLI (`genrsa -traditional`, `ecparam -genkey`,
/// `pkcs8 -topk8`, `dgst -sha256 -sign`); the ES256 DER signature was converted to R || S
/// with Python `cryptography`. Test keys only, not credentials.
enum OpenSSLCLIFixtures {
    static let rsaTraditionalPEM = """
-----BEGIN RSA PRIVATE KEY-----
MIIEogIBAAKCAQEAuXRbFV8gCUN4wqqKbFfxetrlajAJ0gfRxC29o7+v/DAoRKr2
9PhGZLDF6twRhtoRn4aHQrV2QzE1gC9CYJhFRMuvjmKPmLuHsLF3fu+nF7AEZqlD
TDejvGmesO5ZrIjlfblYxWkK5F1+OSQi3RlRGXFZawz1zuHezjvJ+qzzNYdMkn9K
niJHq70vEBB587MzZhZ3SX0CWLYEJbvtELa5zc81k22zv5wu+Mq7V7qePTkaw5Pb
xQo3pNRNhmvHyCi+sDIHbmWwvbFTN4mgpfis34PiaSpPzndbxC3Bhr7nqnCTRrpo
xggX51Rr3U1Jo/aMHtTYQ2LUUlUla55fQ6KHJwIDAQABAoIBAAlSXMJaFIlSqmRt
NRBVaqO9vU//7SZw/S1qt9WzbLxKNrlI4f6V54KSfh2cL9ytjmWMhLT+MQfB6/Sv
AMZL28N6/Nk1LA7wcirCqNp+X6bpp+Gkerz/Lkw/VNouM4oKxtpHHDwEAnz7FBKk
Ndpo4NzcsogWeoPfx5a/MPEC4NCyZRy3ZBBZ1wj6AfbUN/k+1eSSTXK6b+0G/1oM
6rvNIWdIwQfZa94M9GyOVwsCKHq9qdsKFEfD7DWJ8Ap/9jQZ+uzEejdv/OgfCBoj
HtvxoGdf74FZAMpUrvXX8d18PifR5SyQV85RunRoMLL4h+06vB1/KMDQUXbWj1C+
miOvZJkCgYEA8qMaCt0ouUSrC96SOGfdiNHDvvPuTwr+HcWd1KDMesvq3iK+WE9B
fmFmHV7MsSdd4xmTJZbhztbWCmnZTIenALmSzw+pcbpr13WCvE8vq9CwUBk2o9wb
jX7ehIegsz8hszKrsVqzlpg5Zd8W8XH27uuKCOJ5wvhEMD72GoxAulkCgYEAw6sL
7AMXG+tmaLUcsIlMQj5othqiRaqDh9i/Dl6LMzOdukiC0tw4kBFN7hs8sHbK1p+b
c9acdoYmIr+7DsxjnPsVySf/F29z8EM/HiBtCuAlc56YzSSkG68STtL+k9iU7yUZ
6tOrlliGA2CKVZ+c/sbwVSNN5FSwcGQPamx6HX8CgYAx6R0NSQr8eUSaD3GSisMG
Ruf2GqVVuxQkuabKuzz0sYehpBH1hnAZeB2SQxLmCgwFEBi1rcDLVGP5Bmb9mBXh
T0sErtsTGt7eFj0LUVqkBCyQfW9A66D7TTKmnmOPG5hqDS1GMTsp6iw8aVSF3ASI
hwkA5N1ZHsqgBgOH2HvkGQKBgF1tAlhCcXpHP7KnJ3ezVtIacmzg8rJI5FysxSzb
P6PG9XzIuo5r0CYZ3RffsW6gieFIfDUnN7Xv/61/1pUOSlHeIVzW2BocgUMrGKwN
14Ll23wFMfhhkmoVgaxZWmzFcPduw504TCmRQwvBwMt5VsDfxEkifkKTnVtMq3+p
I/WJAoGAIfAEtJEdgPMKh/WpnvOL8FzbUmVXyslEL1qhc/8OvpIrdu6UBB1f1l5K
+/W0/6poVJhDur8iosG3b2Ku8ghrPjmg2ojuMaM1fAL3vh3k4MClJ4RKulQyVQUF
HQqzpsW8wmQjbw1BM8UelMAd4CX7gtlV8is1jIbUpwGpNo2r1I4=
-----END RSA PRIVATE KEY-----
"""
    static let rsaPublicPEM = """
-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAuXRbFV8gCUN4wqqKbFfx
etrlajAJ0gfRxC29o7+v/DAoRKr29PhGZLDF6twRhtoRn4aHQrV2QzE1gC9CYJhF
RMuvjmKPmLuHsLF3fu+nF7AEZqlDTDejvGmesO5ZrIjlfblYxWkK5F1+OSQi3RlR
GXFZawz1zuHezjvJ+qzzNYdMkn9KniJHq70vEBB587MzZhZ3SX0CWLYEJbvtELa5
zc81k22zv5wu+Mq7V7qePTkaw5PbxQo3pNRNhmvHyCi+sDIHbmWwvbFTN4mgpfis
34PiaSpPzndbxC3Bhr7nqnCTRrpoxggX51Rr3U1Jo/aMHtTYQ2LUUlUla55fQ6KH
JwIDAQAB
-----END PUBLIC KEY-----
"""
    static let rs256Token = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzYUBwcm9qLmlhbS5nc2VydmljZWFjY291bnQuY29tIiwic2NvcGUiOiJodHRwczovL3d3dy5nb29nbGVhcGlzLmNvbS9hdXRoL2ZpcmViYXNlLm1lc3NhZ2luZyIsImF1ZCI6Imh0dHBzOi8vb2F1dGgyLmdvb2dsZWFwaXMuY29tL3Rva2VuIiwiaWF0IjoxNzAwMDAwMDAwLCJleHAiOjE3MDAwMDM2MDB9.lVWGuaXZAKAU2AWqaX0eZlkJOCUSagn9vPQsEBeCRUR8aJFil-e64DrJVYqkWdy_XusjXHisbuSYYN71xoNlOMcBob7P7mvm4Mbt5HI3RDSYfvAMkWXUU-tgHfVD9GnzxomTdzaXJKGEpmAf0EKbTHYhXw-IT2pTzqw4oGJDMG6L5Z93ZH19A8aaClmMpO1qMhRF-cvpS9MwSgH_VwK8_RJ9QbueBexgbt7pLgwHn5phjKInjDBopWVuQCTTilQpQpQne4qTLwbl0I_1HZLdvzEe2-qnZiyqx0yiXoTNFonpwJDjFhKXItFUncp3wbVtwsDblOb3qMDY1fhd5r0KNg"
    static let ecSEC1PEM = """
-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIO5S0HxHqyl1aIxIC+4lp6yNEIoHiKXxT/PtTvbefJyToAoGCCqGSM49
AwEHoUQDQgAE0sqlzFdr5WsjdMFNGgiPS5YAITuhR9pAE7r2wBKtsN0k/u+E1zFv
qt0cjPF4zmTfA9Z7tCQ+i3vHQSBcb6HVxA==
-----END EC PRIVATE KEY-----
"""
    static let ecPKCS8PEM = """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg7lLQfEerKXVojEgL
7iWnrI0QigeIpfFP8+1O9t58nJOhRANCAATSyqXMV2vlayN0wU0aCI9LlgAhO6FH
2kATuvbAEq2w3ST+74TXMW+q3RyM8XjOZN8D1nu0JD6Le8dBIFxvodXE
-----END PRIVATE KEY-----
"""
    static let ecPublicPEM = """
-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE0sqlzFdr5WsjdMFNGgiPS5YAITuh
R9pAE7r2wBKtsN0k/u+E1zFvqt0cjPF4zmTfA9Z7tCQ+i3vHQSBcb6HVxA==
-----END PUBLIC KEY-----
"""
    static let es256Token = "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ.eyJpc3MiOiJERUYxMjNHSElKIiwiaWF0IjoxNzAwMDAwMDAwfQ.invqO0dlYIKLHDMOxApdqT25ih_R6voOud5Moo2ODX37eOT1NEnkJ2mPECiqloRO5xXcaXwsxdLzQwPq4QbPWQ"
    /// The same EC key as PKCS#8 without the optional public key (`ec -no_public | pkcs8 -topk8`).
    static let ecPKCS8NoPublicPEM = """
-----BEGIN PRIVATE KEY-----
MEECAQAwEwYHKoZIzj0CAQYIKoZIzj0DAQcEJzAlAgEBBCDuUtB8R6spdWiMSAvu
JaesjRCKB4il8U/z7U723nyckw==
-----END PRIVATE KEY-----
"""
    /// The same key, passphrase-protected: PKCS#8 (`pkcs8 -topk8 -v2 aes-256-cbc`) and traditional (`ec -aes128`).
    static let ecEncryptedPKCS8PEM = """
-----BEGIN ENCRYPTED PRIVATE KEY-----
MIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAijG82hYAKF7QICCAAw
DAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEPo4CPYqbva6W7G8rnLoBhYEgZAo
3Ez2CJQsvr8UvjYJCxV6ORPaoeRPjpB0+X3O4Kc8mkWhayL0zRdrh4OVnyJ9J1Ry
Ef3rlwBOJTAY64Gy5uznHTKk9FOtzb2k8FjgElGOdhe1NNhBIpV+2Ue1Nb3Px1LL
Ru49/9nGPEfZOiyxPh2acUQV8l3DHoUbwmxeR1RZXXrTOf9JzUZVuGHY1CfoENc=
-----END ENCRYPTED PRIVATE KEY-----
"""
    static let ecEncryptedTraditionalPEM = """
-----BEGIN EC PRIVATE KEY-----
Proc-Type: 4,ENCRYPTED
DEK-Info: AES-128-CBC,0CFA5CB00C12047974091EBD63E23083

/AtAMhAVahsW6EsYYYm41Z/CPLe6vO6Cw8JbszLvpsUB1WseHgBZ6IWYz+/8EPxg
JQTP3VaC2IVSzJYrJadKfj8P3D3iQBUZz+8MU2j5bFGUDj51r9wCq8nohLKnewWo
9mwIinOB1lYZGbYkyTf4KTJRTh8JLT/pBwk6p4yuJno=
-----END EC PRIVATE KEY-----
"""
}
