"""A lecture the class follows on their phones: its state on disk (store), the phones' routes and page
(routes), the QR code of the student link (qr)."""
